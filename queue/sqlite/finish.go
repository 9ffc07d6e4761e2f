package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/queuectl/queuectl/queue"
	"github.com/queuectl/queuectl/queue/internal/storekit"
)

// finishJob records an outcome if the claim still holds (see queue's
// lifecycle for the races it settles). With a cancel request pending it
// records the alternative the lifecycle decided (?12, ?13). (With a
// RETURNING clause the same statement made the engine benchmark use about
// 1.4 times the CPU, twice the system time; hence the read after it.) The
// final attempt of a job that finishes is kept on the job's row (?15 to
// ?19, migration 12: storekit.FinalOnRow), any other goes to attempts.
const finishJob = `UPDATE jobs SET
	state = CASE WHEN cancel_requested = 1 THEN ?12 ELSE ?1 END,
	attempts = ?2, run_at = ?3, finished_at = ?4, exit_code = ?5,
	error = CASE WHEN cancel_requested = 1 THEN ?13 ELSE ?6 END,
	updated_at = ?7, lease_until = NULL, cancel_requested = 0, uncharged = ?14,
	last_started_at = ?15, last_outcome = ?16, last_signal = ?17, last_output = ?18, last_dropped = ?19
	WHERE id = ?8 AND worker = ?9 AND attempts = ?10 AND state = 'processing' AND (?11 = 0 OR lease_until <= ?11)`

// finished reads the finished jobs' queues and new states, for the
// counters, and whether other jobs wait on each: only those need settling,
// and the lookup is a point probe in a (mostly empty) index, so a finish
// without dependents costs next to nothing. One statement per batch.
const finished = `SELECT id, queue, state, EXISTS (SELECT 1 FROM job_deps WHERE dep_id = jobs.id)
	FROM jobs WHERE id IN (SELECT value FROM json_each(?))`

// dropLive deletes the live output of finished jobs: the attempt's whole
// output is now in its history. One statement per batch.
const dropLive = `DELETE FROM live_output WHERE job_id IN (SELECT value FROM json_each(?))`

const insertAttempt = `INSERT INTO attempts (job_id, number, started_at, finished_at, exit_code, signal, outcome,
	worker, error, output, dropped) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`

// FinishJobs implements queue.Store.
func (s *Store) FinishJobs(ctx context.Context, fs []queue.Finish) ([]bool, error) {
	applied, _, err := s.finishAndClaim(ctx, fs, nil)
	if err != nil {
		return nil, fmt.Errorf("finish jobs: %w", err)
	}
	return applied, nil
}

// FinishAndClaim implements queue.FinishClaimer: the outcomes first, so
// that jobs they release may be claimed (when the claim's Now is not
// before the outcomes'), then each claim.
func (s *Store) FinishAndClaim(ctx context.Context, fs []queue.Finish, cs []queue.ClaimParams) ([]bool, [][]*queue.Job, error) {
	applied, claims, err := s.finishAndClaim(ctx, fs, cs)
	if err != nil {
		return nil, nil, fmt.Errorf("finish and claim: %w", err)
	}
	return applied, claims, nil
}

func (s *Store) finishAndClaim(ctx context.Context, fs []queue.Finish, cs []queue.ClaimParams) ([]bool, [][]*queue.Job, error) {
	applied := make([]bool, len(fs))
	claims := make([][]*queue.Job, len(cs))
	runnable := false
	err := s.write(ctx, false, func(ctx context.Context, tx *sql.Tx) (err error) {
		if runnable, err = s.finishTx(ctx, tx, fs, applied); err != nil {
			return err
		}
		for i, p := range cs {
			if claims[i], err = s.claimTx(ctx, tx, p); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, nil, err
	}
	if runnable {
		s.wake.notify()
	}
	if slices.Contains(applied, true) {
		s.events.notify()
	}
	return applied, claims, nil
}

// finishTx records the outcomes fs in tx, setting applied, and reports
// whether any job became runnable.
func (s *Store) finishTx(ctx context.Context, tx *sql.Tx, fs []queue.Finish, applied []bool) (runnable bool, err error) {
	if len(fs) == 0 {
		return false, nil
	}
	upd, err := s.stmt(ctx, tx, finishJob)
	if err != nil {
		return false, err
	}
	ins, err := s.stmt(ctx, tx, insertAttempt)
	if err != nil {
		return false, err
	}
	for i, f := range fs {
		applied[i] = false
		cState, cErr := f.IfCancelRequested()
		r, final := f.Record, storekit.FinalOnRow(f)
		res, err := upd.ExecContext(ctx, append([]any{string(f.State), f.Attempts, toUS(f.RunAt), toUS(r.FinishedAt),
			nullInt(f.ExitCode), nullString(f.Error), toUS(f.Now), f.JobID, f.Worker, f.Attempt, toUSOrZero(f.LeaseExpiredBy),
			string(cState), nullString(cErr), f.Uncharged}, finalColumns(r, final)...)...)
		if err != nil {
			return false, err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			continue
		}
		applied[i] = true
		if !final {
			_, err = ins.ExecContext(ctx, f.JobID, r.Number, toUSNull(r.StartedAt), toUS(r.FinishedAt), nullInt(r.ExitCode),
				nullString(r.Signal), string(r.Outcome), nullString(r.Worker), nullString(r.Error), r.Output, r.Dropped)
			if err != nil {
				return false, err
			}
		}
		if f.State.Runnable() {
			runnable = true
		}
	}
	ended, err := s.afterFinish(ctx, tx, fs, applied)
	if err != nil {
		return false, err
	}
	// The jobs waiting on these learn how they ended.
	released, err := storekit.Settle(ctx, settleTx{tx, &s.tally}, ended, fs[0].Now)
	return runnable || released, err
}

// finalColumns returns finishJob's last five values: the attempt r's
// start, outcome, signal, output and dropped bytes when it is kept on its
// job's row (final), else NULLs. Output is NULL when there is none, so
// that jobs_output_finished holds only jobs with output to prune.
func finalColumns(r queue.Attempt, final bool) []any {
	if !final {
		return []any{nil, nil, nil, nil, nil}
	}
	var output, dropped any
	if len(r.Output) > 0 {
		output = r.Output
	}
	if r.Dropped != 0 {
		dropped = r.Dropped
	}
	return []any{toUSNull(r.StartedAt), string(r.Outcome), nullString(r.Signal), output, dropped}
}

// afterFinish counts the applied finishes of fs, drops their live output
// and returns the finished jobs that others wait on.
func (s *Store) afterFinish(ctx context.Context, tx *sql.Tx, fs []queue.Finish, applied []bool) ([]string, error) {
	var ids []string
	for i, f := range fs {
		if applied[i] {
			ids = append(ids, f.JobID)
		}
	}
	if len(ids) == 0 {
		return nil, nil
	}
	list, _ := json.Marshal(ids)
	read, err := s.stmt(ctx, tx, finished)
	if err != nil {
		return nil, err
	}
	rows, err := read.QueryContext(ctx, string(list))
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	type job struct{ queue, state string }
	jobs := make(map[string]job, len(ids))
	var ended []string
	for rows.Next() {
		var id string
		var j job
		var waited bool
		if err := rows.Scan(&id, &j.queue, &j.state, &waited); err != nil {
			return nil, err
		}
		jobs[id] = j
		if waited {
			ended = append(ended, id)
		}
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	for i, f := range fs {
		if j := jobs[f.JobID]; applied[i] {
			s.tally.move(j.queue, queue.StateProcessing, queue.State(j.state))
			s.tally.attempt(j.queue, f.Record.Outcome, queue.RunMicros(f.Record), toUS(f.Record.FinishedAt))
		}
	}
	drop, err := s.stmt(ctx, tx, dropLive)
	if err != nil {
		return nil, err
	}
	_, err = drop.ExecContext(ctx, string(list))
	return ended, err
}
