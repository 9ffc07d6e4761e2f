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

// ClaimJobs implements queue.Store. It reads the jobs to claim through
// jobs_claim (or jobs_claim_queue) in claim order, then takes them with one
// UPDATE by rowid; the transaction holds the only write lock, so no other
// writer can take the same rows in between. Reading the rows before the
// UPDATE gives the claim their old state and run_at, which the counters
// need, and is cheaper than RETURNING every column.
func (s *Store) ClaimJobs(ctx context.Context, p queue.ClaimParams) ([]*queue.Job, error) {
	if p.Limit <= 0 {
		return nil, nil
	}
	var jobs []*queue.Job
	err := s.write(ctx, false, func(ctx context.Context, tx *sql.Tx) (err error) {
		jobs, err = s.claimTx(ctx, tx, p)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("claim jobs: %w", err)
	}
	return jobs, nil
}

// claimTx claims up to p.Limit jobs in tx and returns them in claim order.
func (s *Store) claimTx(ctx context.Context, tx *sql.Tx, p queue.ClaimParams) ([]*queue.Job, error) {
	if p.Limit <= 0 {
		return nil, nil
	}
	ids, jobs, err := s.freeJobs(ctx, tx, p)
	if err == nil && len(ids) == 0 {
		ids, jobs, err = s.steeredJobs(ctx, tx, p)
	}
	if err != nil || len(ids) == 0 {
		return nil, err
	}
	take, err := s.stmt(ctx, tx, claimSet+` WHERE rowid IN (`+placeholders(len(ids))+`)`)
	if err != nil {
		return nil, err
	}
	if _, err := take.ExecContext(ctx, append([]any{p.Worker, toUS(p.Now), toUS(p.LeaseUntil), toUS(p.Now)}, ids...)...); err != nil {
		return nil, err
	}
	for _, j := range jobs {
		s.tally.move(j.Queue, j.State, queue.StateProcessing)
		s.tally.start(j.Queue, toUS(p.Now)-toUS(j.RunAt))
		claimed(j, p)
	}
	// A steered claim reads its rows in rowid order.
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

// claimSet is what a claim changes in a job's row; claimed makes the same
// change to the job read before it.
const claimSet = `UPDATE jobs SET state = 'processing', attempts = attempts + 1, worker = ?, started_at = ?,
		finished_at = NULL, lease_until = ?, updated_at = ?, cancel_requested = 0`

func claimed(j *queue.Job, p queue.ClaimParams) {
	j.State = queue.StateProcessing
	j.Attempts++
	j.Worker = p.Worker
	j.StartedAt, j.UpdatedAt = fromUS(toUS(p.Now)), fromUS(toUS(p.Now))
	j.FinishedAt = time.Time{}
	j.LeaseUntil = fromUS(toUS(p.LeaseUntil))
	j.CancelRequested = false
}

// freeJobs reads the jobs to claim when no queue the claim may take from
// is paused or limited: one statement, the engine's fast path. It reads
// none when one is (the NOT EXISTS is evaluated once per statement), and
// the claim then reads the controls and takes the steered path.
func (s *Store) freeJobs(ctx context.Context, tx *sql.Tx, p queue.ClaimParams) ([]any, []*queue.Job, error) {
	args := []any{toUS(p.Now)}
	for range 2 { // the jobs' queue filter, then the controls'
		for _, q := range p.Queues {
			args = append(args, q)
		}
	}
	return s.claimRows(ctx, tx, freeQuery(p.Queues, p.Limit), args)
}

// freeQuery is freeJobs' statement for a claim of up to limit jobs of
// queues (every queue when empty); its values are now and the queues twice.
func freeQuery(queues []string, limit int) string {
	index, filter := claimIndex(queues)
	controls := ""
	if len(queues) > 0 {
		controls = ` AND name IN (` + placeholders(len(queues)) + `)`
	}
	return `SELECT rowid, ` + jobColumns + ` FROM jobs INDEXED BY ` + index + `
		WHERE state IN ('pending', 'failed') AND run_at <= ?` + filter + `
			AND NOT EXISTS (SELECT 1 FROM queue_controls WHERE (` + steered + `)` + controls + `)
		ORDER BY priority DESC, run_at, created_at` + limitTo(limit)
}

// steeredJobs reads the jobs to claim when freeJobs read none: nothing is
// due, or a queue the claim may take from is paused or limited.
func (s *Store) steeredJobs(ctx context.Context, tx *sql.Tx, p queue.ClaimParams) ([]any, []*queue.Job, error) {
	st, err := s.stmt(ctx, tx, steeredControls)
	if err != nil {
		return nil, nil, err
	}
	rows, err := st.QueryContext(ctx)
	if err != nil {
		return nil, nil, err
	}
	cs, err := scanControls(rows)
	if err != nil {
		return nil, nil, err
	}
	if cs = queue.SteeredIn(cs, p.Queues); len(cs) == 0 {
		return nil, nil, nil
	}
	ids, err := s.claimSteered(ctx, tx, p, cs)
	if err != nil || len(ids) == 0 {
		return nil, nil, err
	}
	return s.claimRows(ctx, tx, `SELECT rowid, `+jobColumns+` FROM jobs WHERE rowid IN (`+placeholders(len(ids))+`)`, ids)
}

// claimRows runs query, which selects the rowid and then jobColumns, and
// returns the rowids and the jobs.
func (s *Store) claimRows(ctx context.Context, tx *sql.Tx, query string, args []any) ([]any, []*queue.Job, error) {
	st, err := s.stmt(ctx, tx, query)
	if err != nil {
		return nil, nil, err
	}
	rows, err := st.QueryContext(ctx, args...)
	if err != nil {
		return nil, nil, err
	}
	defer rows.Close()
	var ids []any
	var jobs []*queue.Job
	for rows.Next() {
		var id int64
		j, err := scanJob(withRowid{rows, &id})
		if err != nil {
			return nil, nil, err
		}
		ids, jobs = append(ids, id), append(jobs, j)
	}
	return ids, jobs, rows.Err()
}

// withRowid scans a row whose first column is the rowid.
type withRowid struct {
	rows  *sql.Rows
	rowid *int64
}

func (w withRowid) Scan(dest ...any) error { return w.rows.Scan(append([]any{w.rowid}, dest...)...) }

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
