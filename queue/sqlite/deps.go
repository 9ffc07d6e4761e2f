package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"time"

	"github.com/queuectl/queuectl/queue"
	"github.com/queuectl/queuectl/queue/internal/storekit"
)

// settleTx runs storekit.Settle's steps in a write transaction; the one
// writer serializes settles, so nothing is locked.
type settleTx struct{ tx *sql.Tx }

func (t settleTx) WaitingDependents(ctx context.Context, ids []string) ([]storekit.Dependent, error) {
	b, _ := json.Marshal(ids)
	rows, err := t.tx.QueryContext(ctx, `SELECT d.job_id, d.dep_id, coalesce(j.state, '')
		FROM job_deps d JOIN jobs w ON w.id = d.job_id AND w.state = 'waiting' LEFT JOIN jobs j ON j.id = d.dep_id
		WHERE d.dep_id IN (SELECT value FROM json_each(?)) ORDER BY d.job_id`, string(b))
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []storekit.Dependent
	for rows.Next() {
		var d storekit.Dependent
		var state string
		if err := rows.Scan(&d.JobID, &d.DepID, &state); err != nil {
			return nil, err
		}
		d.DepState = queue.State(state)
		out = append(out, d)
	}
	return out, rows.Err()
}

func (t settleTx) Blocked(ctx context.Context, id string) (bool, error) {
	var blocked bool
	err := t.tx.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM job_deps d JOIN jobs j ON j.id = d.dep_id
		WHERE d.job_id = ? AND j.state <> 'completed')`, id).Scan(&blocked)
	return blocked, err
}

func (t settleTx) Release(ctx context.Context, id string, now time.Time) error {
	_, err := t.tx.ExecContext(ctx, `UPDATE jobs SET state = 'pending', run_at = max(run_at, ?1), updated_at = ?1
		WHERE id = ?2 AND state = 'waiting'`, toUS(now), id)
	return err
}

func (t settleTx) CancelWaiting(ctx context.Context, id, reason string, now time.Time) error {
	_, err := t.tx.ExecContext(ctx, `UPDATE jobs SET state = 'cancelled', error = ?, updated_at = ?
		WHERE id = ? AND state = 'waiting'`, reason, toUS(now), id)
	return err
}
