package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/queuectl/queuectl/queue"
)

const jobColumns = `id, queue, command, state, priority, attempts, max_retries, timeout_us, backoff_base,
	max_backoff_us, run_at, created_at, updated_at, started_at, finished_at, exit_code, error, worker,
	lease_until, cancel_requested, env, dir, template, scheduled_at`

type scanner interface{ Scan(dest ...any) error }

func scanJob(row scanner) (*queue.Job, error) {
	var (
		j                                                        queue.Job
		state                                                    string
		timeoutUS, maxBackoffUS, runAt, createdAt, updatedAt     int64
		startedAt, finishedAt, exitCode, leaseUntil, scheduledAt sql.NullInt64
		errText, worker, env, dir, template                      sql.NullString
		cancel                                                   int
	)
	err := row.Scan(&j.ID, &j.Queue, &j.Command, &state, &j.Priority, &j.Attempts, &j.MaxRetries, &timeoutUS,
		&j.BackoffBase, &maxBackoffUS, &runAt, &createdAt, &updatedAt, &startedAt, &finishedAt, &exitCode,
		&errText, &worker, &leaseUntil, &cancel, &env, &dir, &template, &scheduledAt)
	if err != nil {
		return nil, err
	}
	j.State = queue.State(state)
	j.Timeout = time.Duration(timeoutUS) * time.Microsecond
	j.MaxBackoff = time.Duration(maxBackoffUS) * time.Microsecond
	j.RunAt, j.CreatedAt, j.UpdatedAt = fromUS(runAt), fromUS(createdAt), fromUS(updatedAt)
	j.StartedAt, j.FinishedAt, j.LeaseUntil = fromUSNull(startedAt), fromUSNull(finishedAt), fromUSNull(leaseUntil)
	j.ScheduledAt = fromUSNull(scheduledAt)
	if exitCode.Valid {
		c := int(exitCode.Int64)
		j.ExitCode = &c
	}
	j.Error, j.Worker, j.Dir, j.Template = errText.String, worker.String, dir.String, template.String
	j.CancelRequested = cancel != 0
	if env.Valid && env.String != "" {
		if err := json.Unmarshal([]byte(env.String), &j.Env); err != nil {
			return nil, fmt.Errorf("job %s: env: %w", j.ID, err)
		}
	}
	return &j, nil
}

// scanColumn reads the single column of every row and closes rows.
func scanColumn[T any](rows *sql.Rows) ([]T, error) {
	defer rows.Close()
	var out []T
	for rows.Next() {
		var v T
		if err := rows.Scan(&v); err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, rows.Err()
}

func scanJobs(rows *sql.Rows) ([]*queue.Job, error) {
	defer rows.Close()
	var out []*queue.Job
	for rows.Next() {
		j, err := scanJob(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, j)
	}
	return out, rows.Err()
}

const insertJob = `INSERT INTO jobs (id, queue, command, state, priority, attempts, max_retries, timeout_us,
	backoff_base, max_backoff_us, run_at, created_at, updated_at, env, dir, template, scheduled_at, fire_key)
	VALUES (?, ?, ?, 'pending', ?, 0, ?, ?, ?, ?, ?, ?, ?10, ?, ?, ?, ?, ?)`

// insertPlainJob is insertJob for the common job with no environment,
// directory or template: binding values, not SQLite, dominates a bulk
// enqueue, so it binds only the eleven that are set.
const insertPlainJob = `INSERT INTO jobs (id, queue, command, state, priority, attempts, max_retries, timeout_us,
	backoff_base, max_backoff_us, run_at, created_at, updated_at)
	VALUES (?, ?, ?, 'pending', ?, 0, ?, ?, ?, ?, ?, ?, ?10)`

// InsertJobs implements queue.Store.
func (s *Store) InsertJobs(ctx context.Context, jobs []*queue.Job) error {
	if len(jobs) == 0 {
		return nil
	}
	err := s.write(ctx, true, func(tx *sql.Tx) error {
		var full, plain *sql.Stmt
		var err error
		for _, j := range jobs {
			if len(j.Env) == 0 && j.Dir == "" && j.Template == "" && j.ScheduledAt.IsZero() {
				if plain == nil {
					if plain, err = s.stmt(ctx, tx, insertPlainJob); err != nil {
						return err
					}
				}
				_, err = plain.ExecContext(ctx, j.ID, j.Queue, j.Command, j.Priority, j.MaxRetries,
					j.Timeout.Microseconds(), j.BackoffBase, j.MaxBackoff.Microseconds(), toUS(j.RunAt), toUS(j.CreatedAt))
				if isUnique(err) {
					err = fmt.Errorf("%w: %q already exists", queue.ErrDuplicate, j.ID)
				}
			} else {
				if full == nil {
					if full, err = s.stmt(ctx, tx, insertJob); err != nil {
						return err
					}
				}
				err = execInsert(ctx, full, j, "")
			}
			if err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("insert jobs: %w", err)
	}
	s.wake.notify()
	return nil
}

// execInsert inserts one pending job; fireKey is "" for ad-hoc jobs. A
// job's updated_at starts equal to its created_at.
func execInsert(ctx context.Context, st *sql.Stmt, j *queue.Job, fireKey string) error {
	var env sql.NullString
	if len(j.Env) > 0 {
		b, _ := json.Marshal(j.Env)
		env = sql.NullString{String: string(b), Valid: true}
	}
	_, err := st.ExecContext(ctx, j.ID, j.Queue, j.Command, j.Priority, j.MaxRetries, j.Timeout.Microseconds(),
		j.BackoffBase, j.MaxBackoff.Microseconds(), toUS(j.RunAt), toUS(j.CreatedAt), env,
		nullString(j.Dir), nullString(j.Template), toUSNull(j.ScheduledAt), nullString(fireKey))
	if isUnique(err) {
		return fmt.Errorf("%w: %q already exists", queue.ErrDuplicate, j.ID)
	}
	return err
}

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
	index, filter := claimIndex(p.Queues)
	args := []any{p.Worker, toUS(p.Now), toUS(p.LeaseUntil), toUS(p.Now), toUS(p.Now)}
	for _, q := range p.Queues {
		args = append(args, q)
	}
	args = append(args, p.Limit)
	query := `UPDATE jobs SET state = 'processing', attempts = attempts + 1, worker = ?, started_at = ?,
		finished_at = NULL, lease_until = ?, updated_at = ?, cancel_requested = 0
		WHERE rowid IN (SELECT rowid FROM jobs INDEXED BY ` + index + `
			WHERE state IN ('pending', 'failed') AND run_at <= ?` + filter + `
			ORDER BY priority DESC, run_at, created_at LIMIT ?)
		RETURNING rowid`
	var jobs []*queue.Job
	err := s.write(ctx, false, func(tx *sql.Tx) error {
		jobs = nil
		st, err := s.stmt(ctx, tx, query)
		if err != nil {
			return err
		}
		rows, err := st.QueryContext(ctx, args...)
		if err != nil {
			return err
		}
		ids, err := scanColumn[any](rows)
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

// finishJob records an outcome if the claim still holds. A user's cancel
// request wins over a retry: such a job ends cancelled, whatever ended it.
const finishJob = `UPDATE jobs SET
	state = CASE WHEN cancel_requested = 1 AND ?1 IN ('failed', 'pending') THEN 'cancelled' ELSE ?1 END,
	attempts = ?2, run_at = ?3, finished_at = ?4, exit_code = ?5,
	error = CASE WHEN cancel_requested = 1 AND ?1 IN ('failed', 'pending') THEN 'cancelled by user' ELSE ?6 END,
	updated_at = ?7, lease_until = NULL, cancel_requested = 0
	WHERE id = ?8 AND worker = ?9 AND attempts = ?10 AND state = 'processing' AND (?11 = 0 OR lease_until <= ?11)`

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
		for i, f := range fs {
			applied[i] = false
			res, err := upd.ExecContext(ctx, string(f.State), f.Attempts, toUS(f.RunAt), toUS(f.Record.FinishedAt),
				nullInt(f.ExitCode), nullString(f.Error), toUS(f.Now), f.JobID, f.Worker, f.Attempt, toUSOrZero(f.LeaseExpiredBy))
			if err != nil {
				return err
			}
			if n, _ := res.RowsAffected(); n == 0 {
				continue
			}
			applied[i] = true
			r := f.Record
			_, err = ins.ExecContext(ctx, f.JobID, r.Number, toUSNull(r.StartedAt), toUS(r.FinishedAt), nullInt(r.ExitCode),
				nullString(r.Signal), string(r.Outcome), nullString(r.Worker), nullString(r.Error), r.Output, r.Dropped)
			if err != nil {
				return err
			}
			if f.State == queue.StatePending || f.State == queue.StateFailed {
				runnable = true
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("finish jobs: %w", err)
	}
	if runnable {
		s.wake.notify()
	}
	return applied, nil
}

// Heartbeat implements queue.Store.
func (s *Store) Heartbeat(ctx context.Context, p queue.HeartbeatParams) (queue.HeartbeatResult, error) {
	var res queue.HeartbeatResult
	ids, _ := json.Marshal(p.Jobs)
	err := s.write(ctx, false, func(tx *sql.Tx) error {
		res = queue.HeartbeatResult{}
		var stop int
		err := tx.QueryRowContext(ctx, `UPDATE workers SET heartbeat_at = ? WHERE id = ? RETURNING stop_requested`,
			toUS(p.Now), p.Worker).Scan(&stop)
		if errors.Is(err, sql.ErrNoRows) {
			return queue.ErrNotFound
		}
		if err != nil {
			return err
		}
		res.StopRequested = stop != 0
		if len(p.Jobs) == 0 {
			return nil
		}
		// An expired lease is not renewed: a rescuer may have taken the
		// job, and the worker must stop it (it is reported lost).
		rows, err := tx.QueryContext(ctx, `UPDATE jobs SET lease_until = ?
			WHERE id IN (SELECT value FROM json_each(?)) AND worker = ? AND state = 'processing' AND lease_until > ?
			RETURNING id, cancel_requested`, toUS(p.LeaseUntil), string(ids), p.Worker, toUS(p.Now))
		if err != nil {
			return err
		}
		defer rows.Close()
		held := map[string]bool{}
		for rows.Next() {
			var id string
			var cancel int
			if err := rows.Scan(&id, &cancel); err != nil {
				return err
			}
			held[id] = true
			if cancel != 0 {
				res.Cancel = append(res.Cancel, id)
			}
		}
		if err := rows.Err(); err != nil {
			return err
		}
		for _, id := range p.Jobs {
			if !held[id] {
				res.Lost = append(res.Lost, id)
			}
		}
		return nil
	})
	if errors.Is(err, queue.ErrNotFound) {
		return res, fmt.Errorf("heartbeat: worker %s: %w", p.Worker, queue.ErrNotFound)
	}
	if err != nil {
		return res, fmt.Errorf("heartbeat: %w", err)
	}
	return res, nil
}

// RescueCandidates implements queue.Store.
func (s *Store) RescueCandidates(ctx context.Context, p queue.RescueParams) ([]*queue.Job, error) {
	rows, err := s.readDB.QueryContext(ctx, `SELECT `+jobColumns+` FROM jobs
		WHERE state = 'processing' AND (lease_until <= ? OR worker IN (SELECT id FROM workers WHERE host = ?))`,
		toUS(p.Now), p.Host)
	if err != nil {
		return nil, fmt.Errorf("rescue candidates: %w", describe(err))
	}
	jobs, err := scanJobs(rows)
	if err != nil {
		return nil, fmt.Errorf("rescue candidates: %w", describe(err))
	}
	return jobs, nil
}

// NextRunAt implements queue.Store.
func (s *Store) NextRunAt(ctx context.Context, queues []string) (time.Time, error) {
	// A covering scan of the claim index: no table rows are read.
	index, filter := claimIndex(queues)
	query := `SELECT min(run_at) FROM jobs INDEXED BY ` + index + ` WHERE state IN ('pending', 'failed')` + filter
	var args []any
	for _, q := range queues {
		args = append(args, q)
	}
	var next sql.NullInt64
	if err := s.readDB.QueryRowContext(ctx, query, args...).Scan(&next); err != nil {
		return time.Time{}, fmt.Errorf("next run time: %w", describe(err))
	}
	return fromUSNull(next), nil
}

// Wakeups implements queue.Store.
func (s *Store) Wakeups(ctx context.Context) (<-chan struct{}, error) {
	return s.wake.subscribe(ctx)
}

// GetJob implements queue.Store.
func (s *Store) GetJob(ctx context.Context, id string) (*queue.Job, error) {
	j, err := scanJob(s.readDB.QueryRowContext(ctx, `SELECT `+jobColumns+` FROM jobs WHERE id = ?`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("job %q: %w", id, queue.ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("get job: %w", describe(err))
	}
	return j, nil
}

// ListJobs implements queue.Store.
func (s *Store) ListJobs(ctx context.Context, p queue.ListParams) ([]*queue.Job, error) {
	var where []string
	var args []any
	if len(p.States) > 0 {
		where = append(where, "state IN ("+placeholders(len(p.States))+")")
		for _, st := range p.States {
			args = append(args, string(st))
		}
	}
	if p.Queue != "" {
		where = append(where, "queue = ?")
		args = append(args, p.Queue)
	}
	query := `SELECT ` + jobColumns + ` FROM jobs`
	if len(where) > 0 {
		query += " WHERE " + strings.Join(where, " AND ")
	}
	// Newest first: rowids grow in insertion order, and every index ends in
	// the rowid, so no sort is needed.
	query += " ORDER BY rowid DESC"
	if p.Limit > 0 {
		query += " LIMIT ?"
		args = append(args, p.Limit)
	}
	rows, err := s.readDB.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, fmt.Errorf("list jobs: %w", describe(err))
	}
	jobs, err := scanJobs(rows)
	if err != nil {
		return nil, fmt.Errorf("list jobs: %w", describe(err))
	}
	return jobs, nil
}

const attemptColumns = `job_id, number, started_at, finished_at, exit_code, signal, outcome, worker, error, dropped`

func scanAttempt(row scanner, withOutput bool) (*queue.Attempt, error) {
	var (
		a                       queue.Attempt
		started, exit           sql.NullInt64
		finished                int64
		signal, worker, errText sql.NullString
		outcome                 string
	)
	dest := []any{&a.JobID, &a.Number, &started, &finished, &exit, &signal, &outcome, &worker, &errText, &a.Dropped}
	if withOutput {
		dest = append(dest, &a.Output)
	}
	if err := row.Scan(dest...); err != nil {
		return nil, err
	}
	a.StartedAt, a.FinishedAt = fromUSNull(started), fromUS(finished)
	if exit.Valid {
		c := int(exit.Int64)
		a.ExitCode = &c
	}
	a.Signal, a.Worker, a.Error, a.Outcome = signal.String, worker.String, errText.String, queue.Outcome(outcome)
	return &a, nil
}

// Attempts implements queue.Store.
func (s *Store) Attempts(ctx context.Context, jobID string) ([]*queue.Attempt, error) {
	rows, err := s.readDB.QueryContext(ctx, `SELECT `+attemptColumns+` FROM attempts WHERE job_id = ? ORDER BY rowid`, jobID)
	if err != nil {
		return nil, fmt.Errorf("attempts: %w", describe(err))
	}
	defer rows.Close()
	var out []*queue.Attempt
	for rows.Next() {
		a, err := scanAttempt(rows, false)
		if err != nil {
			return nil, fmt.Errorf("attempts: %w", err)
		}
		out = append(out, a)
	}
	return out, rows.Err()
}

// Output implements queue.Store.
func (s *Store) Output(ctx context.Context, jobID string, number int) (*queue.Attempt, error) {
	query := `SELECT ` + attemptColumns + `, output FROM attempts WHERE job_id = ?`
	args := []any{jobID}
	if number > 0 {
		query += ` AND number = ?`
		args = append(args, number)
	}
	query += ` ORDER BY rowid DESC LIMIT 1`
	a, err := scanAttempt(s.readDB.QueryRowContext(ctx, query, args...), true)
	if errors.Is(err, sql.ErrNoRows) {
		if _, gerr := s.GetJob(ctx, jobID); gerr != nil {
			return nil, gerr
		}
		if number > 0 {
			return nil, fmt.Errorf("job %q attempt %d: %w", jobID, number, queue.ErrNotFound)
		}
		return nil, fmt.Errorf("job %q has no finished attempt yet: %w", jobID, queue.ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("output: %w", describe(err))
	}
	return a, nil
}

// CountJobs implements queue.Store.
func (s *Store) CountJobs(ctx context.Context) ([]queue.Count, error) {
	rows, err := s.readDB.QueryContext(ctx, `SELECT queue, state, count(*) FROM jobs GROUP BY queue, state ORDER BY queue, state`)
	if err != nil {
		return nil, fmt.Errorf("count jobs: %w", describe(err))
	}
	defer rows.Close()
	var out []queue.Count
	for rows.Next() {
		var c queue.Count
		var st string
		if err := rows.Scan(&c.Queue, &st, &c.N); err != nil {
			return nil, fmt.Errorf("count jobs: %w", err)
		}
		c.State = queue.State(st)
		out = append(out, c)
	}
	return out, rows.Err()
}

// AttemptStats implements queue.Store.
func (s *Store) AttemptStats(ctx context.Context, since time.Time) ([]queue.AttemptStat, error) {
	rows, err := s.readDB.QueryContext(ctx, `SELECT a.job_id, j.queue, a.outcome, coalesce(a.started_at, a.finished_at), a.finished_at
		FROM attempts a JOIN jobs j ON j.id = a.job_id WHERE a.finished_at >= ? ORDER BY a.finished_at`, toUS(since))
	if err != nil {
		return nil, fmt.Errorf("attempt stats: %w", describe(err))
	}
	defer rows.Close()
	var out []queue.AttemptStat
	for rows.Next() {
		var a queue.AttemptStat
		var outcome string
		var started, finished int64
		if err := rows.Scan(&a.JobID, &a.Queue, &outcome, &started, &finished); err != nil {
			return nil, fmt.Errorf("attempt stats: %w", err)
		}
		a.Outcome = queue.Outcome(outcome)
		a.Duration = time.Duration(finished-started) * time.Microsecond
		a.FinishedAt = fromUS(finished)
		out = append(out, a)
	}
	return out, rows.Err()
}

// RetryJobs implements queue.Store. It changes all named jobs or none.
func (s *Store) RetryJobs(ctx context.Context, p queue.RetryParams) ([]string, error) {
	var moved []string
	err := s.write(ctx, true, func(tx *sql.Tx) error {
		moved = nil
		ids := p.IDs
		if p.AllDead {
			rows, err := tx.QueryContext(ctx, `SELECT id FROM jobs WHERE state = 'dead' ORDER BY created_at`)
			if err != nil {
				return err
			}
			dead, err := scanColumn[string](rows)
			if err != nil {
				return err
			}
			ids = append(ids, dead...)
		}
		for _, id := range ids {
			var state string
			err := tx.QueryRowContext(ctx, `SELECT state FROM jobs WHERE id = ?`, id).Scan(&state)
			if errors.Is(err, sql.ErrNoRows) {
				return fmt.Errorf("job %q: %w", id, queue.ErrNotFound)
			}
			if err != nil {
				return err
			}
			if state != string(queue.StateFailed) && state != string(queue.StateDead) {
				return fmt.Errorf("job %q is %s: %w (only failed or dead jobs can be retried)", id, state, queue.ErrConflict)
			}
			// A dead job starts over with its attempts reset; a failed one
			// just skips the rest of its backoff.
			_, err = tx.ExecContext(ctx, `UPDATE jobs SET state = 'pending', run_at = ?, updated_at = ?,
				attempts = CASE state WHEN 'dead' THEN 0 ELSE attempts END WHERE id = ?`, toUS(p.Now), toUS(p.Now), id)
			if err != nil {
				return err
			}
			moved = append(moved, id)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("retry jobs: %w", err)
	}
	if len(moved) > 0 {
		s.wake.notify()
	}
	return moved, nil
}

// CancelJob implements queue.Store.
func (s *Store) CancelJob(ctx context.Context, id string, now time.Time) (queue.State, error) {
	var was queue.State
	err := s.write(ctx, true, func(tx *sql.Tx) error {
		var state string
		err := tx.QueryRowContext(ctx, `SELECT state FROM jobs WHERE id = ?`, id).Scan(&state)
		if errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("job %q: %w", id, queue.ErrNotFound)
		}
		if err != nil {
			return err
		}
		was = queue.State(state)
		switch was {
		case queue.StatePending, queue.StateFailed:
			_, err = tx.ExecContext(ctx, `UPDATE jobs SET state = 'cancelled', error = 'cancelled by user',
				updated_at = ? WHERE id = ?`, toUS(now), id)
		case queue.StateProcessing:
			_, err = tx.ExecContext(ctx, `UPDATE jobs SET cancel_requested = 1, updated_at = ? WHERE id = ?`, toUS(now), id)
		default:
			err = fmt.Errorf("job %q is %s: %w (only pending, failed or processing jobs can be cancelled)", id, state, queue.ErrConflict)
		}
		return err
	})
	if err != nil {
		return "", fmt.Errorf("cancel job: %w", err)
	}
	if was == queue.StateProcessing {
		s.wake.notify()
	}
	return was, nil
}

// DeleteJobs implements queue.Store.
func (s *Store) DeleteJobs(ctx context.Context, p queue.DeleteParams) (int, error) {
	states := p.States
	if len(states) == 0 {
		states = []queue.State{queue.StateCompleted, queue.StateDead, queue.StateCancelled}
	}
	args := []any{toUS(p.Before)}
	for _, st := range states {
		if !st.Finished() {
			return 0, fmt.Errorf("delete jobs: %w: state %s is not finished (allowed: completed, dead, cancelled)", queue.ErrInvalid, st)
		}
		args = append(args, string(st))
	}
	var n int64
	err := s.write(ctx, true, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `DELETE FROM jobs WHERE updated_at < ? AND state IN (`+placeholders(len(states))+`)`, args...)
		if err != nil {
			return err
		}
		n, err = res.RowsAffected()
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("delete jobs: %w", err)
	}
	return int(n), nil
}

// RegisterWorker implements queue.Store (an upsert).
func (s *Store) RegisterWorker(ctx context.Context, w *queue.WorkerInfo) error {
	queues, _ := json.Marshal(w.Queues)
	err := s.write(ctx, false, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO workers (id, pid, host, boot_id, proc_start, queues, started_at, heartbeat_at)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?)
			ON CONFLICT (id) DO UPDATE SET heartbeat_at = excluded.heartbeat_at`,
			w.ID, w.PID, w.Host, w.BootID, int64(w.ProcStart), string(queues), toUS(w.StartedAt), toUS(w.HeartbeatAt))
		return err
	})
	if err != nil {
		return fmt.Errorf("register worker: %w", err)
	}
	return nil
}

// UnregisterWorker implements queue.Store.
func (s *Store) UnregisterWorker(ctx context.Context, id string) error {
	err := s.write(ctx, false, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `DELETE FROM workers WHERE id = ?`, id)
		return err
	})
	if err != nil {
		return fmt.Errorf("unregister worker: %w", err)
	}
	return nil
}

// ListWorkers implements queue.Store.
func (s *Store) ListWorkers(ctx context.Context) ([]*queue.WorkerInfo, error) {
	rows, err := s.readDB.QueryContext(ctx, `SELECT w.id, w.pid, w.host, w.boot_id, w.proc_start, w.queues, w.started_at,
		w.heartbeat_at, w.stop_requested, (SELECT group_concat(j.id, char(10)) FROM jobs j WHERE j.worker = w.id AND j.state = 'processing')
		FROM workers w ORDER BY w.started_at, w.id`)
	if err != nil {
		return nil, fmt.Errorf("list workers: %w", describe(err))
	}
	defer rows.Close()
	var out []*queue.WorkerInfo
	for rows.Next() {
		var w queue.WorkerInfo
		var queues string
		var start, started, hb int64
		var stop int
		var cur sql.NullString
		if err := rows.Scan(&w.ID, &w.PID, &w.Host, &w.BootID, &start, &queues, &started, &hb, &stop, &cur); err != nil {
			return nil, fmt.Errorf("list workers: %w", err)
		}
		w.ProcStart = uint64(start)
		_ = json.Unmarshal([]byte(queues), &w.Queues)
		w.StartedAt, w.HeartbeatAt, w.StopRequested = fromUS(started), fromUS(hb), stop != 0
		if cur.Valid && cur.String != "" {
			w.CurrentJobs = strings.Split(cur.String, "\n")
		}
		out = append(out, &w)
	}
	return out, rows.Err()
}

// RequestStop implements queue.Store.
func (s *Store) RequestStop(ctx context.Context, ids []string) error {
	err := s.write(ctx, true, func(tx *sql.Tx) error {
		if len(ids) == 0 {
			_, err := tx.ExecContext(ctx, `UPDATE workers SET stop_requested = 1`)
			return err
		}
		b, _ := json.Marshal(ids)
		_, err := tx.ExecContext(ctx, `UPDATE workers SET stop_requested = 1 WHERE id IN (SELECT value FROM json_each(?))`, string(b))
		return err
	})
	if err != nil {
		return fmt.Errorf("request stop: %w", err)
	}
	s.wake.notify()
	return nil
}

// GetConfig implements queue.Store.
func (s *Store) GetConfig(ctx context.Context) (map[string]string, error) {
	rows, err := s.readDB.QueryContext(ctx, `SELECT key, value FROM config`)
	if err != nil {
		return nil, fmt.Errorf("get config: %w", describe(err))
	}
	defer rows.Close()
	out := map[string]string{}
	for rows.Next() {
		var k, v string
		if err := rows.Scan(&k, &v); err != nil {
			return nil, fmt.Errorf("get config: %w", err)
		}
		out[k] = v
	}
	return out, rows.Err()
}

// SetConfig implements queue.Store.
func (s *Store) SetConfig(ctx context.Context, key, value string) error {
	err := s.write(ctx, true, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO config (key, value) VALUES (?, ?)
			ON CONFLICT (key) DO UPDATE SET value = excluded.value`, key, value)
		return err
	})
	if err != nil {
		return fmt.Errorf("set config: %w", err)
	}
	return nil
}
