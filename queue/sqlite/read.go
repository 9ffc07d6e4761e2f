package sqlite

import (
	"cmp"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/queuectl/queuectl/queue"
	"github.com/queuectl/queuectl/queue/internal/storekit"
)

const jobColumns = `id, queue, command, state, priority, attempts, max_retries, timeout_us, backoff_base,
	max_backoff_us, run_at, created_at, updated_at, started_at, finished_at, exit_code, error, worker,
	lease_until, cancel_requested, env, dir, template, scheduled_at, uncharged, labels, hooks, unique_key,
	(SELECT group_concat(dep_id, char(10)) FROM job_deps WHERE job_id = jobs.id)`

type scanner interface{ Scan(dest ...any) error }

func scanJob(row scanner) (*queue.Job, error) {
	var (
		j                                                        queue.Job
		state                                                    string
		timeoutUS, maxBackoffUS, runAt, createdAt, updatedAt     int64
		startedAt, finishedAt, exitCode, leaseUntil, scheduledAt sql.NullInt64
		errText, worker, env, dir, template                      sql.NullString
		labels, hooks, uniqueKey, after                          sql.NullString
		cancel                                                   int
	)
	err := row.Scan(&j.ID, &j.Queue, &j.Command, &state, &j.Priority, &j.Attempts, &j.MaxRetries, &timeoutUS,
		&j.BackoffBase, &maxBackoffUS, &runAt, &createdAt, &updatedAt, &startedAt, &finishedAt, &exitCode,
		&errText, &worker, &leaseUntil, &cancel, &env, &dir, &template, &scheduledAt, &j.Uncharged, &labels, &hooks,
		&uniqueKey, &after)
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
	j.UniqueKey = uniqueKey.String
	if after.Valid && after.String != "" {
		j.After = strings.Split(after.String, "\n")
	}
	for _, f := range []struct {
		name string
		col  sql.NullString
		dst  any
	}{{"env", env, &j.Env}, {"labels", labels, &j.Labels}, {"hooks", hooks, &j.Hooks}} {
		if f.col.Valid && f.col.String != "" {
			if err := json.Unmarshal([]byte(f.col.String), f.dst); err != nil {
				return nil, fmt.Errorf("job %s: %s: %w", j.ID, f.name, err)
			}
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

// GetJob implements queue.Store.
func (s *Store) GetJob(ctx context.Context, id string) (*queue.Job, error) {
	j, err := scanJob(s.readDB.QueryRowContext(ctx, `SELECT `+jobColumns+` FROM jobs WHERE id = ? AND state <> 'staged'`, id))
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
	} else {
		where = append(where, "state <> 'staged'") // an import's, not yet committed (bulk.go)
	}
	if p.Queue != "" {
		where = append(where, "queue = ?")
		args = append(args, p.Queue)
	}
	if p.Search != "" {
		where = append(where, "(instr(id, ?) > 0 OR instr(command, ?) > 0)")
		args = append(args, p.Search, p.Search)
	}
	if !p.DueAfter.IsZero() {
		where = append(where, "run_at > ?")
		args = append(args, toUS(p.DueAfter))
	}
	for _, k := range slices.Sorted(maps.Keys(p.Labels)) {
		where = append(where, "labels IS NOT NULL AND EXISTS (SELECT 1 FROM json_each(labels) WHERE key = ? AND value = ?)")
		args = append(args, k, p.Labels[k])
	}
	if p.After != "" {
		var after int64
		err := s.readDB.QueryRowContext(ctx, `SELECT rowid FROM jobs WHERE id = ?`, p.After).Scan(&after)
		if errors.Is(err, sql.ErrNoRows) {
			return nil, fmt.Errorf("list jobs: cursor job %q: %w", p.After, queue.ErrNotFound)
		}
		if err != nil {
			return nil, fmt.Errorf("list jobs: %w", describe(err))
		}
		where = append(where, "rowid < ?")
		args = append(args, after)
	}
	query := `SELECT ` + jobColumns + ` FROM jobs`
	if len(where) > 0 {
		query += " WHERE " + strings.Join(where, " AND ")
	}
	// Newest first: rowids grow in insertion order, and every index ends in
	// the rowid, so no sort is needed.
	query += " ORDER BY rowid DESC"
	if p.Limit > 0 {
		query += limitTo(p.Limit)
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

// attemptColumns are the columns of attempts and of job_attempts, which
// adds the final attempts kept on finished jobs' rows (migration 12).
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
	rows, err := s.readDB.QueryContext(ctx, `SELECT `+attemptColumns+` FROM job_attempts WHERE job_id = ? ORDER BY seq`, jobID)
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
	query := `SELECT ` + attemptColumns + `, output FROM job_attempts WHERE job_id = ?`
	args := []any{jobID}
	if number > 0 {
		query += ` AND number = ?`
		args = append(args, number)
	}
	query += ` ORDER BY seq DESC LIMIT 1`
	a, err := scanAttempt(s.readDB.QueryRowContext(ctx, query, args...), true)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, storekit.NoOutput(ctx, s.GetJob, jobID, number)
	}
	if err != nil {
		return nil, fmt.Errorf("output: %w", describe(err))
	}
	return a, nil
}

// OutputAt implements queue.Store.
func (s *Store) OutputAt(ctx context.Context, jobID string, i int) (*queue.Attempt, error) {
	a, err := scanAttempt(s.readDB.QueryRowContext(ctx, `SELECT `+attemptColumns+`, output FROM job_attempts WHERE job_id = ?
		ORDER BY seq LIMIT 1 OFFSET ?`, jobID, max(i, 0)), true)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, storekit.NoOutputAt(ctx, s.GetJob, jobID, i)
	}
	if err != nil {
		return nil, fmt.Errorf("output: %w", describe(err))
	}
	return a, nil
}

// CountJobs implements queue.Store from job_counts, which the write
// transactions keep (counts.go).
func (s *Store) CountJobs(ctx context.Context) ([]queue.Count, error) {
	rows, err := s.readDB.QueryContext(ctx, `SELECT queue, state, n FROM job_counts WHERE n > 0 AND state <> 'staged' ORDER BY queue, state`)
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

// runTimes sums run_slots (counts.go) over a window: the minutes from ?1
// until ?2, the hours from ?2 on, per step of ?3 microseconds from ?1 (one
// sum when ?3 is 0).
const runTimes = `SELECT queue, CASE WHEN ?3 > 0 THEN (slot - ?1) / ?3 ELSE 0 END AS step, class, le_us,
		sum(n), min(min_us), max(max_us)
	FROM (SELECT slot, queue, class, le_us, n, min_us, max_us FROM run_slots WHERE span = 60000000 AND slot >= ?1 AND slot < ?2
		UNION ALL
		SELECT slot, queue, class, le_us, n, min_us, max_us FROM run_slots WHERE span = 3600000000 AND slot >= ?2)
	GROUP BY queue, step, class, le_us HAVING sum(n) > 0`

// RunTimes implements queue.Store.
func (s *Store) RunTimes(ctx context.Context, p queue.RunTimeParams) ([]queue.RunTimeCount, error) {
	start, hours := toUS(p.Start()), int64(math.MaxInt64)
	if h := p.Hours(); !h.IsZero() {
		hours = toUS(h)
	}
	rows, err := s.readDB.QueryContext(ctx, runTimes, start, hours, p.Step.Microseconds())
	if err != nil {
		return nil, fmt.Errorf("run times: %w", describe(err))
	}
	defer rows.Close()
	var out []queue.RunTimeCount
	for rows.Next() {
		var c queue.RunTimeCount
		var step int64
		var class string
		if err := rows.Scan(&c.Queue, &step, &class, &c.LE, &c.N, &c.Min, &c.Max); err != nil {
			return nil, fmt.Errorf("run times: %w", err)
		}
		c.Class = queue.Outcome(class)
		if p.Step > 0 {
			c.Slot = p.Start().Add(time.Duration(step) * p.Step)
		}
		out = append(out, c)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("run times: %w", err)
	}
	return out, nil
}

// SlowestAttempts implements queue.Store.
func (s *Store) SlowestAttempts(ctx context.Context, p queue.SlowestParams) ([]queue.AttemptStat, error) {
	out, err := storekit.Slowest(ctx, slowestSource{s}, p)
	if err != nil {
		return nil, fmt.Errorf("slowest attempts: %w", describe(err))
	}
	return out, nil
}

// slowestSource reads storekit.Slowest's figures.
type slowestSource struct{ s *Store }

// hourMaxima is the longest run time of each hour slot from ?1 on.
const hourMaxima = `SELECT slot, max(max_us) FROM run_slots WHERE span = 3600000000 AND slot >= ?1 GROUP BY slot`

func (r slowestSource) HourMaxima(ctx context.Context, hour time.Time) ([]storekit.SlotMax, error) {
	rows, err := r.s.readDB.QueryContext(ctx, hourMaxima, toUS(hour))
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []storekit.SlotMax
	for rows.Next() {
		var slot int64
		var m storekit.SlotMax
		if err := rows.Scan(&slot, &m.Max); err != nil {
			return nil, err
		}
		m.Slot = fromUS(slot)
		out = append(out, m)
	}
	return out, rows.Err()
}

// longestAttempts and longestFinal read the longest attempts of one minute
// (?1) that ran at least ?2 microseconds from the end of the minute's range
// of attempts_slowest and of jobs_slowest (the final attempts kept on the
// jobs' rows, migration 12): the indexes' expressions, to the letter. The
// limit follows each (limitTo).
const (
	longestAttempts = `SELECT a.job_id, j.queue, a.outcome, a.finished_at - coalesce(a.started_at, a.finished_at) AS d, a.finished_at
	FROM attempts a INDEXED BY attempts_slowest JOIN jobs j ON j.id = a.job_id
	WHERE a.finished_at / 60000000 = ?1 AND a.finished_at - coalesce(a.started_at, a.finished_at) >= ?2
	ORDER BY a.finished_at - coalesce(a.started_at, a.finished_at) DESC`
	longestFinal = `SELECT id, queue, last_outcome, finished_at - coalesce(last_started_at, finished_at) AS d, finished_at
	FROM jobs INDEXED BY jobs_slowest
	WHERE last_outcome IS NOT NULL AND finished_at / 60000000 = ?1 AND finished_at - coalesce(last_started_at, finished_at) >= ?2
	ORDER BY finished_at - coalesce(last_started_at, finished_at) DESC`
)

func (r slowestSource) Longest(ctx context.Context, from, to time.Time, atLeast int64, limit int) ([]queue.AttemptStat, error) {
	var sts []*sql.Stmt
	defer func() {
		for _, st := range sts {
			st.Close()
		}
	}()
	for _, q := range []string{longestAttempts, longestFinal} {
		st, err := r.s.readDB.PrepareContext(ctx, q+limitTo(limit))
		if err != nil {
			return nil, err
		}
		sts = append(sts, st)
	}
	var out []queue.AttemptStat
	for m := from; m.Before(to); m = m.Add(queue.MinuteSlot) {
		var minute []queue.AttemptStat
		for _, st := range sts {
			found, err := scanLongest(ctx, st, toUS(m)/queue.MinuteSlot.Microseconds(), atLeast)
			if err != nil {
				return nil, err
			}
			minute = append(minute, found...)
		}
		slices.SortStableFunc(minute, func(a, b queue.AttemptStat) int { return cmp.Compare(b.Duration, a.Duration) })
		out = append(out, minute[:min(len(minute), limit)]...)
	}
	return out, nil
}

// scanLongest runs one of the longest statements for a minute.
func scanLongest(ctx context.Context, st *sql.Stmt, minute, atLeast int64) ([]queue.AttemptStat, error) {
	rows, err := st.QueryContext(ctx, minute, atLeast)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []queue.AttemptStat
	for rows.Next() {
		var a queue.AttemptStat
		var outcome string
		var d, finished int64
		if err := rows.Scan(&a.JobID, &a.Queue, &outcome, &d, &finished); err != nil {
			return nil, err
		}
		a.Outcome, a.Duration, a.FinishedAt = queue.Outcome(outcome), time.Duration(d)*time.Microsecond, fromUS(finished)
		out = append(out, a)
	}
	return out, rows.Err()
}
