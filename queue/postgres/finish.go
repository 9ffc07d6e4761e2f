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

// FinishJobs implements queue.Store.
func (s *Store) FinishJobs(ctx context.Context, fs []queue.Finish) ([]bool, error) {
	applied := make([]bool, len(fs))
	if len(fs) == 0 {
		return applied, nil
	}
	runnable := false
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		runnable = false
		b := &pgx.Batch{}
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
		br := tx.SendBatch(ctx, b)
		for i, f := range fs {
			tag, err := br.Exec()
			if err != nil {
				br.Close()
				return err
			}
			applied[i] = tag.RowsAffected() > 0
			if applied[i] && f.State.Runnable() {
				runnable = true
			}
		}
		var dependents bool
		if err := br.QueryRow().Scan(&dependents); err != nil {
			br.Close()
			return err
		}
		if err := br.Close(); err != nil {
			return err
		}
		if dependents { // the jobs waiting on these learn how they ended
			var ended []string
			for i, f := range fs {
				if applied[i] {
					ended = append(ended, f.JobID)
				}
			}
			released, err := storekit.Settle(ctx, settleTx{tx}, ended, fs[0].Now)
			if err != nil {
				return err
			}
			runnable = runnable || released
		}
		if slices.Contains(applied, true) {
			if _, err := tx.Exec(ctx, notifySQL, s.eventsChannel); err != nil {
				return err
			}
		}
		if runnable {
			_, err := tx.Exec(ctx, notifySQL, s.channel)
			return err
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("finish jobs: %w", err)
	}
	if runnable {
		s.wake.broadcast()
	}
	return applied, nil
}
