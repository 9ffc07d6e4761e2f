package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/queuectl/queuectl/queue"
)

var jobColumnNames = []string{"id", "queue", "command", "state", "priority", "attempts", "max_retries", "timeout_us",
	"backoff_base", "max_backoff_us", "run_at", "created_at", "updated_at", "started_at", "finished_at", "exit_code",
	"error", "worker", "lease_until", "cancel_requested", "env", "dir", "template", "scheduled_at"}

// jobColumns lists the job columns, each prefixed with p ("j." or "").
func jobColumns(p string) string {
	return p + strings.Join(jobColumnNames, ", "+p)
}

var allJobColumns = jobColumns("")

// scanJob reads the columns of jobColumns, then extra.
func scanJob(row pgx.Row, extra ...any) (*queue.Job, error) {
	var (
		j                                              queue.Job
		state                                          string
		timeoutUS, maxBackoffUS                        int64
		runAt, createdAt, updatedAt                    time.Time
		startedAt, finishedAt, leaseUntil, scheduledAt *time.Time
		errText, worker, dir, template                 *string
		env                                            []byte
	)
	dest := []any{&j.ID, &j.Queue, &j.Command, &state, &j.Priority, &j.Attempts, &j.MaxRetries, &timeoutUS,
		&j.BackoffBase, &maxBackoffUS, &runAt, &createdAt, &updatedAt, &startedAt, &finishedAt, &j.ExitCode,
		&errText, &worker, &leaseUntil, &j.CancelRequested, &env, &dir, &template, &scheduledAt}
	if err := row.Scan(append(dest, extra...)...); err != nil {
		return nil, err
	}
	j.State = queue.State(state)
	j.Timeout = time.Duration(timeoutUS) * time.Microsecond
	j.MaxBackoff = time.Duration(maxBackoffUS) * time.Microsecond
	j.RunAt, j.CreatedAt, j.UpdatedAt = runAt.UTC(), createdAt.UTC(), updatedAt.UTC()
	j.StartedAt, j.FinishedAt, j.LeaseUntil = utc(startedAt), utc(finishedAt), utc(leaseUntil)
	j.ScheduledAt = utc(scheduledAt)
	j.Error, j.Worker, j.Dir, j.Template = str(errText), str(worker), str(dir), str(template)
	if len(env) > 0 {
		if err := json.Unmarshal(env, &j.Env); err != nil {
			return nil, fmt.Errorf("job %s: env: %w", j.ID, err)
		}
	}
	return &j, nil
}

func scanJobs(rows pgx.Rows) ([]*queue.Job, error) {
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
	VALUES ($1, $2, $3, 'pending', $4, 0, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16)`

// insertArgs are insertJob's arguments for one pending job; fireKey is ""
// for ad-hoc jobs.
func insertArgs(j *queue.Job, fireKey string) []any {
	var env []byte
	if len(j.Env) > 0 {
		env, _ = json.Marshal(j.Env)
	}
	return []any{j.ID, j.Queue, j.Command, j.Priority, j.MaxRetries, j.Timeout.Microseconds(), j.BackoffBase,
		j.MaxBackoff.Microseconds(), j.RunAt, j.CreatedAt, j.UpdatedAt, env, nullString(j.Dir),
		nullString(j.Template), nullTime(j.ScheduledAt), nullString(fireKey)}
}

// InsertJobs implements queue.Store. The rows go in one pipelined batch
// inside one transaction; a taken id rolls back the whole batch.
func (s *Store) InsertJobs(ctx context.Context, jobs []*queue.Job) error {
	if len(jobs) == 0 {
		return nil
	}
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		b := &pgx.Batch{}
		for _, j := range jobs {
			b.Queue(insertJob, insertArgs(j, "")...)
		}
		b.Queue(notifySQL, s.channel)
		br := tx.SendBatch(ctx, b)
		defer br.Close()
		for _, j := range jobs {
			if _, err := br.Exec(); err != nil {
				if isUnique(err) {
					return fmt.Errorf("%w: %q already exists", queue.ErrDuplicate, j.ID)
				}
				return err
			}
		}
		if _, err := br.Exec(); err != nil {
			return err
		}
		return br.Close()
	})
	if err != nil {
		return fmt.Errorf("insert jobs: %w", err)
	}
	s.wake.broadcast()
	return nil
}

// claimSQL returns the claim statement. The CTE walks jobs_claim (one
// queue: jobs_claim_queue) in claim order, skipping rows another claimer
// has locked; the UPDATE takes them in the same statement. The limit is
// written into the text, so that even a generic plan of the prepared
// statement knows how few rows the CTE yields and joins them through the
// primary key (with LIMIT $n it may plan to hash the whole table). Its
// parameters: $1 now, $2 worker, $3 lease until, then $4 the queue (one)
// or the queues (several).
func claimSQL(queues []string, limit int) string {
	filter := ""
	switch {
	case len(queues) == 1:
		filter = " AND queue = $4"
	case len(queues) > 1:
		filter = " AND queue = ANY($4)"
	}
	return `WITH c AS (
		SELECT id FROM jobs
		WHERE state IN ('pending', 'failed') AND run_at <= $1` + filter + `
		ORDER BY priority DESC, run_at, created_at, seq
		LIMIT ` + strconv.Itoa(limit) + `
		FOR UPDATE SKIP LOCKED)
	UPDATE jobs j SET state = 'processing', attempts = j.attempts + 1, worker = $2, started_at = $1,
		finished_at = NULL, lease_until = $3, updated_at = $1,
		cancel_requested = false
	FROM c WHERE j.id = c.id
	RETURNING ` + jobColumns("j.") + `, j.seq`
}

func claimArgs(p queue.ClaimParams) []any {
	args := []any{p.Now, p.Worker, p.LeaseUntil}
	switch {
	case len(p.Queues) == 1:
		args = append(args, p.Queues[0])
	case len(p.Queues) > 1:
		args = append(args, p.Queues)
	}
	return args
}

// ClaimJobs implements queue.Store.
func (s *Store) ClaimJobs(ctx context.Context, p queue.ClaimParams) ([]*queue.Job, error) {
	if p.Limit <= 0 {
		return nil, nil
	}
	rows, err := s.pool.Query(ctx, claimSQL(p.Queues, p.Limit), claimArgs(p)...)
	if err != nil {
		return nil, fmt.Errorf("claim jobs: %w", err)
	}
	defer rows.Close()
	type claimed struct {
		job *queue.Job
		seq int64
	}
	var got []claimed
	for rows.Next() {
		var c claimed
		if c.job, err = scanJob(rows, &c.seq); err != nil {
			return nil, fmt.Errorf("claim jobs: %w", err)
		}
		got = append(got, c)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("claim jobs: %w", err)
	}
	// RETURNING does not keep the CTE's order.
	sort.Slice(got, func(a, b int) bool {
		x, y := got[a].job, got[b].job
		if x.Priority != y.Priority {
			return x.Priority > y.Priority
		}
		if !x.RunAt.Equal(y.RunAt) {
			return x.RunAt.Before(y.RunAt)
		}
		if !x.CreatedAt.Equal(y.CreatedAt) {
			return x.CreatedAt.Before(y.CreatedAt)
		}
		return got[a].seq < got[b].seq
	})
	jobs := make([]*queue.Job, len(got))
	for i, c := range got {
		jobs[i] = c.job
	}
	return jobs, nil
}

// finishJob updates the job if the claim still holds and, only then, writes
// the history row: one statement per finish.
const finishJob = `WITH u AS (
		UPDATE jobs SET
			state = CASE WHEN cancel_requested AND $1::text IN ('failed', 'pending') THEN 'cancelled' ELSE $1::text END,
			attempts = $2, run_at = $3, finished_at = $4, exit_code = $5,
			error = CASE WHEN cancel_requested AND $1::text IN ('failed', 'pending') THEN 'cancelled by user' ELSE $6::text END,
			updated_at = $7, lease_until = NULL, cancel_requested = false
		WHERE id = $8 AND worker = $9 AND attempts = $10 AND state = 'processing'
			AND ($21::timestamptz IS NULL OR lease_until <= $21::timestamptz)
		RETURNING id)
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
			b.Queue(finishJob, string(f.State), f.Attempts, f.RunAt, r.FinishedAt, f.ExitCode, nullString(f.Error),
				f.Now, f.JobID, f.Worker, f.Attempt,
				r.Number, nullTime(r.StartedAt), r.FinishedAt, r.ExitCode, nullString(r.Signal), string(r.Outcome),
				nullString(r.Worker), nullString(r.Error), r.Output, r.Dropped, nullTime(f.LeaseExpiredBy))
		}
		br := tx.SendBatch(ctx, b)
		for i, f := range fs {
			tag, err := br.Exec()
			if err != nil {
				br.Close()
				return err
			}
			applied[i] = tag.RowsAffected() > 0
			if applied[i] && (f.State == queue.StatePending || f.State == queue.StateFailed) {
				runnable = true
			}
		}
		if err := br.Close(); err != nil {
			return err
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

// Heartbeat implements queue.Store.
func (s *Store) Heartbeat(ctx context.Context, p queue.HeartbeatParams) (queue.HeartbeatResult, error) {
	var res queue.HeartbeatResult
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		res = queue.HeartbeatResult{}
		err := tx.QueryRow(ctx, `UPDATE workers SET heartbeat_at = $1 WHERE id = $2 RETURNING stop_requested`,
			p.Now, p.Worker).Scan(&res.StopRequested)
		if errors.Is(err, pgx.ErrNoRows) {
			return queue.ErrNotFound
		}
		if err != nil {
			return err
		}
		if len(p.Jobs) == 0 {
			return nil
		}
		// An expired lease is not renewed: a rescuer may have taken the
		// job, and the worker must stop it (it is reported lost).
		rows, err := tx.Query(ctx, `UPDATE jobs SET lease_until = $1
			WHERE id = ANY($2) AND worker = $3 AND state = 'processing' AND lease_until > $4
			RETURNING id, cancel_requested`, p.LeaseUntil, p.Jobs, p.Worker, p.Now)
		if err != nil {
			return err
		}
		defer rows.Close()
		held := map[string]bool{}
		cancel := map[string]bool{}
		for rows.Next() {
			var id string
			var c bool
			if err := rows.Scan(&id, &c); err != nil {
				return err
			}
			held[id], cancel[id] = true, c
		}
		if err := rows.Err(); err != nil {
			return err
		}
		for _, id := range p.Jobs {
			if !held[id] {
				res.Lost = append(res.Lost, id)
			} else if cancel[id] {
				res.Cancel = append(res.Cancel, id)
				cancel[id] = false // once, even if listed twice
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
	rows, err := s.pool.Query(ctx, `SELECT `+allJobColumns+` FROM jobs
		WHERE state = 'processing' AND (lease_until <= $1 OR worker IN (SELECT id FROM workers WHERE host = $2))
		ORDER BY seq`, p.Now, p.Host)
	if err != nil {
		return nil, fmt.Errorf("rescue candidates: %w", err)
	}
	jobs, err := scanJobs(rows)
	if err != nil {
		return nil, fmt.Errorf("rescue candidates: %w", err)
	}
	return jobs, nil
}

// NextRunAt implements queue.Store.
func (s *Store) NextRunAt(ctx context.Context, queues []string) (time.Time, error) {
	query := `SELECT min(run_at) FROM jobs WHERE state IN ('pending', 'failed')`
	var args []any
	if len(queues) > 0 {
		query += ` AND queue = ANY($1)`
		args = append(args, queues)
	}
	var next *time.Time
	if err := s.pool.QueryRow(ctx, query, args...).Scan(&next); err != nil {
		return time.Time{}, fmt.Errorf("next run time: %w", err)
	}
	return utc(next), nil
}

// Wakeups implements queue.Store. The first call opens the listening
// connection.
func (s *Store) Wakeups(ctx context.Context) (<-chan struct{}, error) {
	c, err := s.wake.subscribe(ctx)
	if err != nil {
		return nil, fmt.Errorf("wakeups: %w", err)
	}
	return c, nil
}

// GetJob implements queue.Store.
func (s *Store) GetJob(ctx context.Context, id string) (*queue.Job, error) {
	j, err := scanJob(s.pool.QueryRow(ctx, `SELECT `+allJobColumns+` FROM jobs WHERE id = $1`, id))
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, fmt.Errorf("job %q: %w", id, queue.ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("get job: %w", err)
	}
	return j, nil
}

// ListJobs implements queue.Store. Jobs created at the same instant are
// listed in reverse insertion order.
func (s *Store) ListJobs(ctx context.Context, p queue.ListParams) ([]*queue.Job, error) {
	var where []string
	var args []any
	if len(p.States) > 0 {
		args = append(args, stateStrings(p.States))
		where = append(where, fmt.Sprintf("state = ANY($%d)", len(args)))
	}
	if p.Queue != "" {
		args = append(args, p.Queue)
		where = append(where, fmt.Sprintf("queue = $%d", len(args)))
	}
	query := `SELECT ` + allJobColumns + ` FROM jobs`
	if len(where) > 0 {
		query += " WHERE " + strings.Join(where, " AND ")
	}
	query += " ORDER BY created_at DESC, seq DESC"
	if p.Limit > 0 {
		args = append(args, p.Limit)
		query += fmt.Sprintf(" LIMIT $%d", len(args))
	}
	rows, err := s.pool.Query(ctx, query, args...)
	if err != nil {
		return nil, fmt.Errorf("list jobs: %w", err)
	}
	jobs, err := scanJobs(rows)
	if err != nil {
		return nil, fmt.Errorf("list jobs: %w", err)
	}
	return jobs, nil
}

const attemptColumns = `job_id, number, started_at, finished_at, exit_code, signal, outcome, worker, error, dropped`

func scanAttempt(row pgx.Row, withOutput bool) (*queue.Attempt, error) {
	var (
		a                       queue.Attempt
		started                 *time.Time
		finished                time.Time
		signal, worker, errText *string
		outcome                 string
	)
	dest := []any{&a.JobID, &a.Number, &started, &finished, &a.ExitCode, &signal, &outcome, &worker, &errText, &a.Dropped}
	if withOutput {
		dest = append(dest, &a.Output)
	}
	if err := row.Scan(dest...); err != nil {
		return nil, err
	}
	a.StartedAt, a.FinishedAt = utc(started), finished.UTC()
	a.Signal, a.Worker, a.Error, a.Outcome = str(signal), str(worker), str(errText), queue.Outcome(outcome)
	return &a, nil
}

// Attempts implements queue.Store.
func (s *Store) Attempts(ctx context.Context, jobID string) ([]*queue.Attempt, error) {
	rows, err := s.pool.Query(ctx, `SELECT `+attemptColumns+` FROM attempts WHERE job_id = $1 ORDER BY seq`, jobID)
	if err != nil {
		return nil, fmt.Errorf("attempts: %w", err)
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
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("attempts: %w", err)
	}
	return out, nil
}

// Output implements queue.Store.
func (s *Store) Output(ctx context.Context, jobID string, number int) (*queue.Attempt, error) {
	query := `SELECT ` + attemptColumns + `, output FROM attempts WHERE job_id = $1`
	args := []any{jobID}
	if number > 0 {
		query += ` AND number = $2`
		args = append(args, number)
	}
	query += ` ORDER BY seq DESC LIMIT 1`
	a, err := scanAttempt(s.pool.QueryRow(ctx, query, args...), true)
	if errors.Is(err, pgx.ErrNoRows) {
		if _, gerr := s.GetJob(ctx, jobID); gerr != nil {
			return nil, gerr
		}
		if number > 0 {
			return nil, fmt.Errorf("job %q attempt %d: %w", jobID, number, queue.ErrNotFound)
		}
		return nil, fmt.Errorf("job %q has no finished attempt yet: %w", jobID, queue.ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("output: %w", err)
	}
	return a, nil
}

// CountJobs implements queue.Store.
func (s *Store) CountJobs(ctx context.Context) ([]queue.Count, error) {
	rows, err := s.pool.Query(ctx, `SELECT queue, state, count(*) FROM jobs GROUP BY queue, state ORDER BY queue, state`)
	if err != nil {
		return nil, fmt.Errorf("count jobs: %w", err)
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
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("count jobs: %w", err)
	}
	return out, nil
}

// AttemptStats implements queue.Store.
func (s *Store) AttemptStats(ctx context.Context, since time.Time) ([]queue.AttemptStat, error) {
	rows, err := s.pool.Query(ctx, `SELECT a.job_id, j.queue, a.outcome, coalesce(a.started_at, a.finished_at), a.finished_at
		FROM attempts a JOIN jobs j ON j.id = a.job_id WHERE a.finished_at >= $1 ORDER BY a.finished_at, a.seq`, since)
	if err != nil {
		return nil, fmt.Errorf("attempt stats: %w", err)
	}
	defer rows.Close()
	var out []queue.AttemptStat
	for rows.Next() {
		var a queue.AttemptStat
		var outcome string
		var started, finished time.Time
		if err := rows.Scan(&a.JobID, &a.Queue, &outcome, &started, &finished); err != nil {
			return nil, fmt.Errorf("attempt stats: %w", err)
		}
		a.Outcome = queue.Outcome(outcome)
		a.Duration = finished.Sub(started)
		a.FinishedAt = finished.UTC()
		out = append(out, a)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("attempt stats: %w", err)
	}
	return out, nil
}

// RetryJobs implements queue.Store. It changes all named jobs or none: the
// rows are locked (in id order, so concurrent retries cannot deadlock),
// checked in the order given, then moved together.
func (s *Store) RetryJobs(ctx context.Context, p queue.RetryParams) ([]string, error) {
	var moved []string
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		moved = nil
		ids := append([]string(nil), p.IDs...)
		if p.AllDead {
			rows, err := tx.Query(ctx, `SELECT id FROM jobs WHERE state = 'dead' ORDER BY created_at, seq`)
			if err != nil {
				return err
			}
			dead, err := pgx.CollectRows(rows, pgx.RowTo[string])
			if err != nil {
				return err
			}
			ids = append(ids, dead...)
		}
		if len(ids) == 0 {
			return nil
		}
		rows, err := tx.Query(ctx, `SELECT id, state FROM jobs WHERE id = ANY($1) ORDER BY id FOR UPDATE`, ids)
		if err != nil {
			return err
		}
		states := map[string]string{}
		var id, state string
		_, err = pgx.ForEachRow(rows, []any{&id, &state}, func() error {
			states[id] = state
			return nil
		})
		if err != nil {
			return err
		}
		for _, id := range ids {
			state, ok := states[id]
			if !ok {
				return fmt.Errorf("job %q: %w", id, queue.ErrNotFound)
			}
			if state != string(queue.StateFailed) && state != string(queue.StateDead) {
				return fmt.Errorf("job %q is %s: %w (only failed or dead jobs can be retried)", id, state, queue.ErrConflict)
			}
			states[id] = string(queue.StatePending)
			moved = append(moved, id)
		}
		// A dead job starts over with its attempts reset; a failed one just
		// skips the rest of its backoff.
		_, err = tx.Exec(ctx, `UPDATE jobs SET state = 'pending', run_at = $1, updated_at = $1,
			attempts = CASE state WHEN 'dead' THEN 0 ELSE attempts END WHERE id = ANY($2)`, p.Now, moved)
		if err != nil {
			return err
		}
		_, err = tx.Exec(ctx, notifySQL, s.channel)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("retry jobs: %w", err)
	}
	if len(moved) > 0 {
		s.wake.broadcast()
	}
	return moved, nil
}

// CancelJob implements queue.Store.
func (s *Store) CancelJob(ctx context.Context, id string, now time.Time) (queue.State, error) {
	var was queue.State
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		var state string
		err := tx.QueryRow(ctx, `SELECT state FROM jobs WHERE id = $1 FOR UPDATE`, id).Scan(&state)
		if errors.Is(err, pgx.ErrNoRows) {
			return fmt.Errorf("job %q: %w", id, queue.ErrNotFound)
		}
		if err != nil {
			return err
		}
		was = queue.State(state)
		switch was {
		case queue.StatePending, queue.StateFailed:
			_, err = tx.Exec(ctx, `UPDATE jobs SET state = 'cancelled', error = 'cancelled by user',
				updated_at = $1 WHERE id = $2`, now, id)
		case queue.StateProcessing:
			if _, err = tx.Exec(ctx, `UPDATE jobs SET cancel_requested = true, updated_at = $1 WHERE id = $2`, now, id); err == nil {
				_, err = tx.Exec(ctx, notifySQL, s.channel)
			}
		default:
			err = fmt.Errorf("job %q is %s: %w (only pending, failed or processing jobs can be cancelled)", id, state, queue.ErrConflict)
		}
		return err
	})
	if err != nil {
		return "", fmt.Errorf("cancel job: %w", err)
	}
	if was == queue.StateProcessing {
		s.wake.broadcast()
	}
	return was, nil
}

// DeleteJobs implements queue.Store. History goes with its job (ON DELETE
// CASCADE).
func (s *Store) DeleteJobs(ctx context.Context, p queue.DeleteParams) (int, error) {
	states := p.States
	if len(states) == 0 {
		states = []queue.State{queue.StateCompleted, queue.StateDead, queue.StateCancelled}
	}
	for _, st := range states {
		if !st.Finished() {
			return 0, fmt.Errorf("delete jobs: %w: state %s is not finished (allowed: completed, dead, cancelled)", queue.ErrInvalid, st)
		}
	}
	tag, err := s.pool.Exec(ctx, `DELETE FROM jobs WHERE updated_at < $1 AND state = ANY($2)`, p.Before, stateStrings(states))
	if err != nil {
		return 0, fmt.Errorf("delete jobs: %w", err)
	}
	return int(tag.RowsAffected()), nil
}
