package postgres

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/queuectl/queuectl/queue"
	"github.com/queuectl/queuectl/queue/internal/storekit"
)

// settleTx runs storekit.Settle's steps in one transaction.
type settleTx struct{ tx conn }

// WaitingDependents locks each waiting job (FOR UPDATE, in id order): when
// two of its dependencies finish at once, the second settle waits for the
// first and then, in a fresh statement, sees both completed.
func (t settleTx) WaitingDependents(ctx context.Context, ids []string) ([]storekit.Dependent, error) {
	return t.dependents(ctx, `SELECT d.job_id, d.dep_id, coalesce(j.state, '')
		FROM job_deps d JOIN jobs w ON w.id = d.job_id LEFT JOIN jobs j ON j.id = d.dep_id
		WHERE d.dep_id = ANY($1) AND w.state = 'waiting' ORDER BY d.job_id FOR UPDATE OF w`, ids)
}

// dependents runs query, which selects (job, dependency, the dependency's
// state) rows for ids, its one argument.
func (t settleTx) dependents(ctx context.Context, query string, ids []string) ([]storekit.Dependent, error) {
	rows, err := t.tx.Query(ctx, query, ids)
	if err != nil {
		return nil, err
	}
	var out []storekit.Dependent
	var d storekit.Dependent
	var state string
	_, err = pgx.ForEachRow(rows, []any{&d.JobID, &d.DepID, &state}, func() error {
		d.DepState = queue.State(state)
		out = append(out, d)
		return nil
	})
	return out, err
}

func (t settleTx) Blocked(ctx context.Context, id string) (bool, error) {
	var blocked bool
	err := t.tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM job_deps d JOIN jobs j ON j.id = d.dep_id
		WHERE d.job_id = $1 AND j.state <> 'completed')`, id).Scan(&blocked)
	return blocked, err
}

func (t settleTx) Release(ctx context.Context, id string, now time.Time) error {
	_, err := t.tx.Exec(ctx, countedUpdate(`UPDATE jobs SET state = 'pending', run_at = greatest(run_at, $1), updated_at = $1
		WHERE id = $2 AND state = 'waiting' RETURNING queue, 'waiting'::text AS was, state AS became`), now, id)
	return err
}

func (t settleTx) CancelWaiting(ctx context.Context, id, reason string, now time.Time) error {
	_, err := t.tx.Exec(ctx, countedUpdate(`UPDATE jobs SET state = 'cancelled', error = $1, updated_at = $2
		WHERE id = $3 AND state = 'waiting' RETURNING queue, 'waiting'::text AS was, state AS became`), reason, now, id)
	return err
}

// hasDependents asks, inside a finish's pipelined batch, whether any of the
// jobs has a dependent at all, so that a finish without any costs no
// round trip.
const hasDependents = `SELECT EXISTS (SELECT 1 FROM job_deps WHERE dep_id = ANY($1))`

func (t settleTx) AfterStates(ctx context.Context, ids []string) ([]storekit.Dependent, error) {
	return t.dependents(ctx, `SELECT d.job_id, d.dep_id, coalesce(j.state, '') FROM job_deps d
		LEFT JOIN jobs j ON j.id = d.dep_id WHERE d.job_id = ANY($1) ORDER BY d.job_id, d.dep_id`, ids)
}
