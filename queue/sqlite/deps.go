package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"time"

	"github.com/queuectl/queuectl/queue"
	"github.com/queuectl/queuectl/queue/internal/storekit"
)

// settleTx runs storekit.Settle's steps in a write transaction; the one
// writer serializes settles, so nothing is locked. Moves are counted in
// tally.
type settleTx struct {
	tx    *sql.Tx
	tally *tally
}

func (t settleTx) WaitingDependents(ctx context.Context, ids []string) ([]storekit.Dependent, error) {
	return t.dependents(ctx, `SELECT d.job_id, d.dep_id, coalesce(j.state, '')
		FROM job_deps d JOIN jobs w ON w.id = d.job_id AND w.state = 'waiting' LEFT JOIN jobs j ON j.id = d.dep_id
		WHERE d.dep_id IN (SELECT value FROM json_each(?)) ORDER BY d.job_id`, ids)
}

// dependents runs query, which selects (job, dependency, the dependency's
// state) rows for the ids its one argument lists as a JSON array.
func (t settleTx) dependents(ctx context.Context, query string, ids []string) ([]storekit.Dependent, error) {
	list, err := json.Marshal(ids)
	if err != nil {
		return nil, err
	}
	rows, err := t.tx.QueryContext(ctx, query, string(list))
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
	return t.leaveWaiting(ctx, queue.StatePending, `UPDATE jobs SET state = 'pending', run_at = max(run_at, ?1), updated_at = ?1
		WHERE id = ?2 AND state = 'waiting' RETURNING queue`, toUS(now), id)
}

func (t settleTx) CancelWaiting(ctx context.Context, id, reason string, now time.Time) error {
	return t.leaveWaiting(ctx, queue.StateCancelled, `UPDATE jobs SET state = 'cancelled', error = ?, updated_at = ?
		WHERE id = ? AND state = 'waiting' RETURNING queue`, reason, toUS(now), id)
}

// leaveWaiting runs move, which changes a waiting job to state to and
// returns its queue (no row: the job was not waiting).
func (t settleTx) leaveWaiting(ctx context.Context, to queue.State, move string, args ...any) error {
	var q string
	err := t.tx.QueryRowContext(ctx, move, args...).Scan(&q)
	if errors.Is(err, sql.ErrNoRows) {
		return nil
	}
	if err == nil {
		t.tally.move(q, queue.StateWaiting, to)
	}
	return err
}

func (t settleTx) AfterStates(ctx context.Context, ids []string) ([]storekit.Dependent, error) {
	return t.dependents(ctx, `SELECT d.job_id, d.dep_id, coalesce(j.state, '') FROM job_deps d
		LEFT JOIN jobs j ON j.id = d.dep_id WHERE d.job_id IN (SELECT value FROM json_each(?))
		ORDER BY d.job_id, d.dep_id`, ids)
}
