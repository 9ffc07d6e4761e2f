package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"

	"github.com/queuectl/queuectl/queue"
	"github.com/queuectl/queuectl/queue/internal/storekit"
)

// finishJob records an outcome if the claim still holds (see queue's
// lifecycle for the races it settles). With a cancel request pending it
// records the alternative the lifecycle decided (?12, ?13).
const finishJob = `UPDATE jobs SET
	state = CASE WHEN cancel_requested = 1 THEN ?12 ELSE ?1 END,
	attempts = ?2, run_at = ?3, finished_at = ?4, exit_code = ?5,
	error = CASE WHEN cancel_requested = 1 THEN ?13 ELSE ?6 END,
	updated_at = ?7, lease_until = NULL, cancel_requested = 0, uncharged = ?14
	WHERE id = ?8 AND worker = ?9 AND attempts = ?10 AND state = 'processing' AND (?11 = 0 OR lease_until <= ?11)
	RETURNING queue, state`

const insertAttempt = `INSERT INTO attempts (job_id, number, started_at, finished_at, exit_code, signal, outcome,
	worker, error, output, dropped) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`

// FinishJobs implements queue.Store.
func (s *Store) FinishJobs(ctx context.Context, fs []queue.Finish) ([]bool, error) {
	applied := make([]bool, len(fs))
	runnable := false
	err := s.write(ctx, false, func(tx *sql.Tx) error {
		upd, err := s.stmt(ctx, tx, finishJob)
		if err != nil {
			return err
		}
		ins, err := s.stmt(ctx, tx, insertAttempt)
		if err != nil {
			return err
		}
		dropLive, err := s.stmt(ctx, tx, `DELETE FROM live_output WHERE job_id = ?`)
		if err != nil {
			return err
		}
		hasDeps, err := s.stmt(ctx, tx, `SELECT EXISTS (SELECT 1 FROM job_deps WHERE dep_id = ?)`)
		if err != nil {
			return err
		}
		var ended []string
		for i, f := range fs {
			applied[i] = false
			cState, cErr := f.IfCancelRequested()
			var q, state string
			err := upd.QueryRowContext(ctx, string(f.State), f.Attempts, toUS(f.RunAt), toUS(f.Record.FinishedAt),
				nullInt(f.ExitCode), nullString(f.Error), toUS(f.Now), f.JobID, f.Worker, f.Attempt, toUSOrZero(f.LeaseExpiredBy),
				string(cState), nullString(cErr), f.Uncharged).Scan(&q, &state)
			if errors.Is(err, sql.ErrNoRows) {
				continue
			}
			if err != nil {
				return err
			}
			applied[i] = true
			// Only a job that others wait on needs settling: a point lookup
			// in a (mostly empty) index, so a finish without dependents
			// costs next to nothing.
			var waited bool
			if err := hasDeps.QueryRowContext(ctx, f.JobID).Scan(&waited); err != nil {
				return err
			}
			if waited {
				ended = append(ended, f.JobID)
			}
			r := f.Record
			_, err = ins.ExecContext(ctx, f.JobID, r.Number, toUSNull(r.StartedAt), toUS(r.FinishedAt), nullInt(r.ExitCode),
				nullString(r.Signal), string(r.Outcome), nullString(r.Worker), nullString(r.Error), r.Output, r.Dropped)
			if err != nil {
				return err
			}
			s.tally.move(q, queue.StateProcessing, queue.State(state))
			s.tally.attempt(q, r.Outcome, runTime(r))
			// The attempt's whole output is now in its history.
			if _, err := dropLive.ExecContext(ctx, f.JobID); err != nil {
				return err
			}
			if f.State.Runnable() {
				runnable = true
			}
		}
		// The jobs waiting on these learn how they ended.
		released, err := storekit.Settle(ctx, settleTx{tx, &s.tally}, ended, fs[0].Now)
		runnable = runnable || released
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("finish jobs: %w", err)
	}
	if runnable {
		s.wake.notify()
	}
	if slices.Contains(applied, true) {
		s.events.notify()
	}
	return applied, nil
}

// runTime is an attempt's run time in microseconds as the counters record
// it: from its start (its end when it has none) to its end.
func runTime(r queue.Attempt) int64 {
	if r.StartedAt.IsZero() {
		return 0
	}
	return toUS(r.FinishedAt) - toUS(r.StartedAt)
}
