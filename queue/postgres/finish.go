package postgres

import (
	"context"
	"fmt"
	"slices"

	"github.com/jackc/pgx/v5"
	"github.com/queuectl/queuectl/queue"
	"github.com/queuectl/queuectl/queue/internal/storekit"
)

// finishJob updates the job if the claim still holds (see queue's lifecycle
// for the races it settles) and, only then, writes the history row: one
// statement per finish. With a cancel request pending it records the
// alternative the lifecycle decided ($22, $23). The attempt's live output
// goes: its whole output is now in the history.
const finishJob = `WITH u AS (
		UPDATE jobs SET
			state = CASE WHEN cancel_requested THEN $22::text ELSE $1::text END,
			attempts = $2, run_at = $3, finished_at = $4, exit_code = $5,
			error = CASE WHEN cancel_requested THEN $23::text ELSE $6::text END,
			updated_at = $7, lease_until = NULL, cancel_requested = false, uncharged = $24
		WHERE id = $8 AND worker = $9 AND attempts = $10 AND state = 'processing'
			AND ($21::timestamptz IS NULL OR lease_until <= $21::timestamptz)
		RETURNING id),
	live AS (DELETE FROM live_output WHERE job_id IN (SELECT id FROM u))
	INSERT INTO attempts (job_id, number, started_at, finished_at, exit_code, signal, outcome, worker, error,
		output, dropped)
	SELECT id, $11::integer, $12::timestamptz, $13::timestamptz, $14::integer, $15::text, $16::text, $17::text,
		$18::text, $19::bytea, $20::bigint
	FROM u`

// FinishJobs implements queue.Store. It is a worker transaction
// (worktx.go): the finishes and the check for dependents go in one
// pipelined batch behind BEGIN, the wake-ups in front of COMMIT.
func (s *Store) FinishJobs(ctx context.Context, fs []queue.Finish) ([]bool, error) {
	applied := make([]bool, len(fs))
	if len(fs) == 0 {
		return applied, nil
	}
	runnable := false
	err := s.pipelinedTx(ctx, func(c conn) (*pgx.Batch, error) {
		runnable = false
		b := beginBatch()
		for _, f := range fs {
			r := f.Record
			cState, cErr := f.IfCancelRequested()
			b.Queue(finishJob, string(f.State), f.Attempts, f.RunAt, r.FinishedAt, f.ExitCode, nullString(f.Error),
				f.Now, f.JobID, f.Worker, f.Attempt,
				r.Number, nullTime(r.StartedAt), r.FinishedAt, r.ExitCode, nullString(r.Signal), string(r.Outcome),
				nullString(r.Worker), nullString(r.Error), r.Output, r.Dropped, nullTime(f.LeaseExpiredBy),
				string(cState), nullString(cErr), f.Uncharged)
		}
		ids := make([]string, len(fs))
		for i, f := range fs {
			ids[i] = f.JobID
		}
		b.Queue(hasDependents, ids)
		dependents, err := sendFinishes(ctx, c, b, fs, applied)
		if err != nil {
			return nil, err
		}
		for i, f := range fs {
			runnable = runnable || applied[i] && f.State.Runnable()
		}
		if dependents { // the jobs waiting on these learn how they ended
			var ended []string
			for i, f := range fs {
				if applied[i] {
					ended = append(ended, f.JobID)
				}
			}
			released, err := storekit.Settle(ctx, settleTx{c}, ended, fs[0].Now)
			if err != nil {
				return nil, err
			}
			runnable = runnable || released
		}
		last := &pgx.Batch{}
		if slices.Contains(applied, true) {
			last.Queue(notifySQL, s.eventsChannel)
		}
		if runnable {
			last.Queue(notifySQL, s.channel)
		}
		return last, nil
	})
	if err != nil {
		return nil, fmt.Errorf("finish jobs: %w", err)
	}
	if runnable {
		s.wake.broadcast()
	}
	return applied, nil
}

// sendFinishes sends FinishJobs' first batch, sets which finishes applied
// and reports whether any of the jobs has dependents.
func sendFinishes(ctx context.Context, c conn, b *pgx.Batch, fs []queue.Finish, applied []bool) (bool, error) {
	br := c.SendBatch(ctx, b)
	defer br.Close()
	if err := opened(br); err != nil {
		return false, err
	}
	for i := range fs {
		tag, err := br.Exec()
		if err != nil {
			return false, err
		}
		applied[i] = tag.RowsAffected() > 0
	}
	var dependents bool
	if err := br.QueryRow().Scan(&dependents); err != nil {
		return false, err
	}
	return dependents, br.Close()
}
