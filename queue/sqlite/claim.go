package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"sort"
	"time"

	"github.com/queuectl/queuectl/queue"
)

// claimIndex names the partial index that yields runnable jobs in claim
// order (the planner, left alone, prefers jobs_state_created and sorts every
// runnable job), and the queue filter. One queue seeks jobs_claim_queue;
// several filter the global order.
func claimIndex(queues []string) (index, filter string) {
	index = "jobs_claim"
	if len(queues) == 1 {
		index = "jobs_claim_queue"
	}
	if len(queues) > 0 {
		filter = " AND queue IN (" + placeholders(len(queues)) + ")"
	}
	return index, filter
}

// ClaimJobs implements queue.Store. The inner SELECT walks jobs_claim (or
// jobs_claim_queue) in order; the UPDATE runs inside the same statement, so
// no other writer can take the same rows.
func (s *Store) ClaimJobs(ctx context.Context, p queue.ClaimParams) ([]*queue.Job, error) {
	if p.Limit <= 0 {
		return nil, nil
	}
	var jobs []*queue.Job
	err := s.write(ctx, false, func(tx *sql.Tx) error {
		jobs = nil
		st, err := s.stmt(ctx, tx, steeredControls)
		if err != nil {
			return err
		}
		rows, err := st.QueryContext(ctx)
		if err != nil {
			return err
		}
		cs, err := scanControls(rows)
		if err != nil {
			return err
		}
		var ids []any
		if cs = queue.SteeredIn(cs, p.Queues); len(cs) == 0 {
			ids, err = s.claimFree(ctx, tx, p)
		} else {
			ids, err = s.claimSteered(ctx, tx, p, cs)
		}
		if err != nil || len(ids) == 0 {
			return err
		}
		// Read the claimed rows in the same transaction. (RETURNING every
		// column costs SQLite several times more than RETURNING the rowid
		// and reading the rows back.)
		get, err := s.stmt(ctx, tx, `SELECT `+jobColumns+` FROM jobs WHERE rowid IN (`+placeholders(len(ids))+`)`)
		if err != nil {
			return err
		}
		rows, err = get.QueryContext(ctx, ids...)
		if err != nil {
			return err
		}
		jobs, err = scanJobs(rows)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("claim jobs: %w", err)
	}
	// RETURNING does not keep the subquery's order.
	sort.Slice(jobs, func(a, b int) bool {
		x, y := jobs[a], jobs[b]
		if x.Priority != y.Priority {
			return x.Priority > y.Priority
		}
		if !x.RunAt.Equal(y.RunAt) {
			return x.RunAt.Before(y.RunAt)
		}
		return x.CreatedAt.Before(y.CreatedAt)
	})
	return jobs, nil
}

const claimSet = `UPDATE jobs SET state = 'processing', attempts = attempts + 1, worker = ?, started_at = ?,
		finished_at = NULL, lease_until = ?, updated_at = ?, cancel_requested = 0`

// claimFree claims when no queue it may take from is paused or limited:
// one statement, the engine's fast path.
func (s *Store) claimFree(ctx context.Context, tx *sql.Tx, p queue.ClaimParams) ([]any, error) {
	index, filter := claimIndex(p.Queues)
	args := []any{p.Worker, toUS(p.Now), toUS(p.LeaseUntil), toUS(p.Now), toUS(p.Now)}
	for _, q := range p.Queues {
		args = append(args, q)
	}
	args = append(args, p.Limit)
	st, err := s.stmt(ctx, tx, claimSet+`
		WHERE rowid IN (SELECT rowid FROM jobs INDEXED BY `+index+`
			WHERE state IN ('pending', 'failed') AND run_at <= ?`+filter+`
			ORDER BY priority DESC, run_at, created_at LIMIT ?)
		RETURNING rowid`)
	if err != nil {
		return nil, err
	}
	rows, err := st.QueryContext(ctx, args...)
	if err != nil {
		return nil, err
	}
	return scanColumn[any](rows)
}

// NextRunAt implements queue.Store.
func (s *Store) NextRunAt(ctx context.Context, queues []string) (time.Time, error) {
	// A covering scan of the claim index: no table rows are read (unless
	// a queue is paused).
	index, filter := claimIndex(queues)
	query := `SELECT min(run_at) FROM jobs INDEXED BY ` + index + ` WHERE state IN ('pending', 'failed')` + filter
	var args []any
	for _, q := range queues {
		args = append(args, q)
	}
	// Paused queues hold no runnable work: a filter only when some are.
	rows, err := s.readDB.QueryContext(ctx, `SELECT name FROM queue_controls WHERE paused = 1`)
	if err != nil {
		return time.Time{}, fmt.Errorf("next run time: %w", describe(err))
	}
	paused, err := scanColumn[any](rows)
	if err != nil {
		return time.Time{}, fmt.Errorf("next run time: %w", describe(err))
	}
	if len(paused) > 0 {
		query += ` AND queue NOT IN (` + placeholders(len(paused)) + `)`
		args = append(args, paused...)
	}
	var next sql.NullInt64
	if err := s.readDB.QueryRowContext(ctx, query, args...).Scan(&next); err != nil {
		return time.Time{}, fmt.Errorf("next run time: %w", describe(err))
	}
	return fromUSNull(next), nil
}
