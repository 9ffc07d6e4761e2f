package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/queuectl/queuectl/queue"
	"github.com/queuectl/queuectl/queue/internal/storekit"
)

var jobColumnNames = []string{"id", "queue", "command", "state", "priority", "attempts", "max_retries", "timeout_us",
	"backoff_base", "max_backoff_us", "run_at", "created_at", "updated_at", "started_at", "finished_at", "exit_code",
	"error", "worker", "lease_until", "cancel_requested", "env", "dir", "template", "scheduled_at", "uncharged", "labels",
	"hooks", "unique_key"}

// jobColumns lists the job columns, each prefixed with p ("j." or ""),
// then the job's dependencies in id order.
func jobColumns(p string) string {
	table := p
	if table == "" {
		table = "jobs."
	}
	return p + strings.Join(jobColumnNames, ", "+p) +
		", (SELECT array_agg(dep_id ORDER BY dep_id) FROM job_deps WHERE job_id = " + table + "id)"
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
		errText, worker, dir, template, uniqueKey      *string
		env, labels, hooks                             []byte
	)
	dest := []any{&j.ID, &j.Queue, &j.Command, &state, &j.Priority, &j.Attempts, &j.MaxRetries, &timeoutUS,
		&j.BackoffBase, &maxBackoffUS, &runAt, &createdAt, &updatedAt, &startedAt, &finishedAt, &j.ExitCode,
		&errText, &worker, &leaseUntil, &j.CancelRequested, &env, &dir, &template, &scheduledAt, &j.Uncharged, &labels,
		&hooks, &uniqueKey, &j.After}
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
	j.UniqueKey = str(uniqueKey)
	for _, f := range []struct {
		name string
		col  []byte
		dst  any
	}{{"env", env, &j.Env}, {"labels", labels, &j.Labels}, {"hooks", hooks, &j.Hooks}} {
		if len(f.col) > 0 {
			if err := json.Unmarshal(f.col, f.dst); err != nil {
				return nil, fmt.Errorf("job %s: %s: %w", j.ID, f.name, err)
			}
		}
	}
	return &j, nil
}

func scanJobs(rows pgx.Rows) ([]*queue.Job, error) {
	return collect(rows, func(r pgx.CollectableRow) (*queue.Job, error) { return scanJob(r) })
}

// queryJobs runs query, which selects allJobColumns, and reads its jobs.
func (s *Store) queryJobs(ctx context.Context, query string, args ...any) ([]*queue.Job, error) {
	rows, err := s.pool.Query(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	return scanJobs(rows)
}

// GetJob implements queue.Store.
func (s *Store) GetJob(ctx context.Context, id string) (*queue.Job, error) {
	if unstorable(id) {
		return nil, fmt.Errorf("job %q: %w", id, queue.ErrNotFound)
	}
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
	var after *listCursor
	if p.After != "" {
		after = new(listCursor)
		err := pgx.ErrNoRows
		if !unstorable(p.After) {
			err = s.pool.QueryRow(ctx, `SELECT created_at, seq FROM jobs WHERE id = $1`, p.After).Scan(&after.created, &after.seq)
		}
		if errors.Is(err, pgx.ErrNoRows) {
			return nil, fmt.Errorf("list jobs: cursor job %q: %w", p.After, queue.ErrNotFound)
		}
		if err != nil {
			return nil, fmt.Errorf("list jobs: %w", err)
		}
	}
	if unstorableFilter(p) {
		return nil, nil
	}
	query, args := listQuery(p, after)
	jobs, err := s.queryJobs(ctx, query, args...)
	if err != nil {
		return nil, fmt.Errorf("list jobs: %w", err)
	}
	return jobs, nil
}

// unstorableFilter tells a listing whose queue, text or labels no job can
// hold: it lists nothing. (A label in JSON would turn bad bytes into
// U+FFFD, and match a job it does not name.)
func unstorableFilter(p queue.ListParams) bool {
	if unstorable(p.Queue) || unstorable(p.Search) {
		return true
	}
	for k, v := range p.Labels {
		if unstorable(k) || unstorable(v) {
			return true
		}
	}
	return false
}

// listCursor is the place of the job a listing goes on after.
type listCursor struct {
	created time.Time
	seq     int64
}

// listQuery is the statement that lists the jobs p asks for, newest first,
// after the cursor when there is one, and its parameters. Jobs are listed
// newest first from the index of their state (finished jobs in an index
// per state, migration 22; the others in jobs_open_created): a listing of
// several states, or of all of them, is a branch per state, each newest
// first under the same limit, merged. No index orders every job by time
// (migration 19): one would take an entry for every version of every job.
func listQuery(p queue.ListParams, after *listCursor) (string, []any) {
	var where []string
	var args []any
	if p.Queue != "" {
		args = append(args, p.Queue)
		where = append(where, fmt.Sprintf("queue = $%d", len(args)))
	}
	if p.Search != "" {
		args = append(args, p.Search)
		where = append(where, fmt.Sprintf("(strpos(id, $%d) > 0 OR strpos(command, $%[1]d) > 0)", len(args)))
	}
	if !p.DueAfter.IsZero() {
		args = append(args, p.DueAfter)
		where = append(where, fmt.Sprintf("run_at > $%d", len(args)))
	}
	if len(p.Labels) > 0 {
		b, _ := json.Marshal(p.Labels)
		args = append(args, string(b))
		where = append(where, fmt.Sprintf("labels @> $%d::jsonb", len(args)))
	}
	if after != nil {
		args = append(args, after.created, after.seq)
		where = append(where, fmt.Sprintf("(created_at, seq) < ($%d, $%d)", len(args)-1, len(args)))
	}
	limit := ""
	if p.Limit > 0 {
		args = append(args, p.Limit)
		limit = fmt.Sprintf(" LIMIT $%d", len(args))
	}
	const newest = " ORDER BY created_at DESC, seq DESC"
	branch := func(columns, state string) string {
		return `SELECT ` + columns + ` FROM jobs WHERE ` + strings.Join(append([]string{state}, where...), " AND ") + newest + limit
	}
	states := listStates(p.States)
	switch len(states) {
	case 0: // only names that are no state
		return branch(allJobColumns, "false"), args
	case 1:
		return branch(allJobColumns, "state = '"+string(states[0])+"'"), args
	}
	branches := make([]string, len(states))
	for i, st := range states {
		branches[i] = "(" + branch("*", "state = '"+string(st)+"'") + ")"
	}
	// The outer select names the merged rows jobs, as allJobColumns does.
	return `SELECT ` + allJobColumns + ` FROM (` + strings.Join(branches, " UNION ALL ") + `) jobs` + newest + limit, args
}

// listStates returns the states a listing of states asks for, each once,
// every state for none. Each is written into the statement as a literal,
// so that the planner can prove a listing index's predicate from the
// statement's text whatever plan it caches; a name that is no state
// matches no job and is left out.
func listStates(asked []queue.State) []queue.State {
	if len(asked) == 0 {
		return queue.States()
	}
	var out []queue.State
	for _, st := range asked {
		if _, err := queue.ParseState(string(st)); err == nil && !slices.Contains(out, st) {
			out = append(out, st)
		}
	}
	return out
}

// attemptColumns are the columns of attempts and of job_attempts, which
// adds the final attempts kept on finished jobs' rows (migration 21).
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
	if unstorable(jobID) {
		return nil, nil
	}
	rows, err := s.pool.Query(ctx, `SELECT `+attemptColumns+` FROM job_attempts WHERE job_id = $1 ORDER BY seq`, jobID)
	if err != nil {
		return nil, fmt.Errorf("attempts: %w", err)
	}
	out, err := collect(rows, func(r pgx.CollectableRow) (*queue.Attempt, error) { return scanAttempt(r, false) })
	if err != nil {
		return nil, fmt.Errorf("attempts: %w", err)
	}
	return out, nil
}

// Output implements queue.Store.
func (s *Store) Output(ctx context.Context, jobID string, number int) (*queue.Attempt, error) {
	if unstorable(jobID) || number > math.MaxInt32 { // attempts.number is an integer column
		return nil, storekit.NoOutput(ctx, s.GetJob, jobID, number)
	}
	query := `SELECT ` + attemptColumns + `, output FROM job_attempts WHERE job_id = $1`
	args := []any{jobID}
	if number > 0 {
		query += ` AND number = $2`
		args = append(args, number)
	}
	query += ` ORDER BY seq DESC LIMIT 1`
	a, err := scanAttempt(s.pool.QueryRow(ctx, query, args...), true)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, storekit.NoOutput(ctx, s.GetJob, jobID, number)
	}
	if err != nil {
		return nil, fmt.Errorf("output: %w", err)
	}
	return a, nil
}

// OutputAt implements queue.Store.
func (s *Store) OutputAt(ctx context.Context, jobID string, i int) (*queue.Attempt, error) {
	if unstorable(jobID) {
		return nil, storekit.NoOutputAt(ctx, s.GetJob, jobID, i)
	}
	a, err := scanAttempt(s.pool.QueryRow(ctx, `SELECT `+attemptColumns+`, output FROM job_attempts WHERE job_id = $1
		ORDER BY seq OFFSET $2 LIMIT 1`, jobID, max(i, 0)), true)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, storekit.NoOutputAt(ctx, s.GetJob, jobID, i)
	}
	if err != nil {
		return nil, fmt.Errorf("output: %w", err)
	}
	return a, nil
}

// CountJobs implements queue.Store from job_totals, which the statements
// that change a job's state keep (countMoves), with a trigger per statement
// for inserts and deletes (migration 11): a few rows per queue, whatever
// the number of jobs. It folds the counter rows first, so that they stay few;
// a fold that fails (a read-only role, say) only leaves more to add up.
func (s *Store) CountJobs(ctx context.Context) ([]queue.Count, error) {
	_ = s.fold(ctx, jobTotals)
	rows, err := s.pool.Query(ctx, `SELECT queue, state, sum(n)::bigint FROM job_totals GROUP BY queue, state HAVING sum(n) > 0
		ORDER BY queue, state`)
	if err != nil {
		return nil, fmt.Errorf("count jobs: %w", err)
	}
	out, err := collect(rows, func(r pgx.CollectableRow) (c queue.Count, err error) {
		var st string
		err = r.Scan(&c.Queue, &st, &c.N)
		c.State = queue.State(st)
		return c, err
	})
	if err != nil {
		return nil, fmt.Errorf("count jobs: %w", err)
	}
	return out, nil
}

// runTimes sums run_slots (migration 10) over a window: the minutes from
// $1 until $2, the hours from $2 on, per step of $3 microseconds from $1
// (one sum when $3 is 0).
const runTimes = `SELECT queue, CASE WHEN $3::bigint > 0 THEN floor(extract(epoch FROM slot - $1) * 1000000 / $3::bigint)::bigint ELSE 0 END AS step,
		class, le_us, sum(n)::bigint, min(min_us), max(max_us)
	FROM (SELECT slot, queue, class, le_us, n, min_us, max_us FROM run_slots WHERE span = 'minute' AND slot >= $1 AND slot < $2
		UNION ALL
		SELECT slot, queue, class, le_us, n, min_us, max_us FROM run_slots WHERE span = 'hour' AND slot >= $2) s
	GROUP BY queue, step, class, le_us HAVING sum(n) > 0`

// noHours stands for "no hour slots" in runTimes.
var noHours = time.Date(9999, 1, 1, 0, 0, 0, 0, time.UTC)

// RunTimes implements queue.Store.
func (s *Store) RunTimes(ctx context.Context, p queue.RunTimeParams) ([]queue.RunTimeCount, error) {
	hours := p.Hours()
	if hours.IsZero() {
		hours = noHours
	}
	rows, err := s.pool.Query(ctx, runTimes, p.Start(), hours, p.Step.Microseconds())
	if err != nil {
		return nil, fmt.Errorf("run times: %w", err)
	}
	out, err := collect(rows, func(r pgx.CollectableRow) (c queue.RunTimeCount, err error) {
		var step int64
		var class string
		err = r.Scan(&c.Queue, &step, &class, &c.LE, &c.N, &c.Min, &c.Max)
		c.Class = queue.Outcome(class)
		if p.Step > 0 {
			c.Slot = p.Start().Add(time.Duration(step) * p.Step)
		}
		return c, err
	})
	if err != nil {
		return nil, fmt.Errorf("run times: %w", err)
	}
	return out, nil
}

// SlowestAttempts implements queue.Store.
func (s *Store) SlowestAttempts(ctx context.Context, p queue.SlowestParams) ([]queue.AttemptStat, error) {
	out, err := storekit.Slowest(ctx, slowestSource{s}, p)
	if err != nil {
		return nil, fmt.Errorf("slowest attempts: %w", err)
	}
	return out, nil
}

// slowestSource reads storekit.Slowest's figures.
type slowestSource struct{ s *Store }

func (r slowestSource) HourMaxima(ctx context.Context, hour time.Time) ([]storekit.SlotMax, error) {
	rows, err := r.s.pool.Query(ctx, `SELECT slot, max(max_us) FROM run_slots WHERE span = 'hour' AND slot >= $1 GROUP BY slot`, hour)
	if err != nil {
		return nil, err
	}
	return collect(rows, func(r pgx.CollectableRow) (m storekit.SlotMax, err error) {
		err = r.Scan(&m.Slot, &m.Max)
		m.Slot = m.Slot.UTC()
		return m, err
	})
}

// longest reads the longest attempts of each minute from $1 until $2, a
// branch each from the end of its range of attempts_slowest and of
// jobs_slowest (the final attempts kept on the jobs' rows, migration 21),
// merged.
var longest = `SELECT x.job_id, j.queue, x.outcome, x.d, x.finished_at
	FROM generate_series($1::timestamptz, $2::timestamptz - interval '1 minute', interval '1 minute') m(minute)
	CROSS JOIN LATERAL (` +
	slowestIn("attempts", "job_id", "outcome", "started_at", "") + ` UNION ALL ` +
	slowestIn("jobs", "id", "last_outcome::text", "last_started_at", "last_outcome IS NOT NULL AND ") + `
		ORDER BY d DESC LIMIT $4) x
	JOIN jobs j ON j.id = x.job_id`

// slowestIn is a branch of longest: the longest attempts of minute
// m.minute in table, whose columns id, outcome and started hold them
// (where narrows the table to them), at least $3 microseconds long, at
// most $4. Its expressions are its index's, to the letter.
func slowestIn(table, id, outcome, started, where string) string {
	d := runMicros(started, "finished_at")
	return `(SELECT ` + id + `, ` + outcome + `, finished_at, ` + d + ` AS d FROM ` + table + `
		WHERE ` + where + `date_trunc('minute', finished_at AT TIME ZONE 'UTC') = m.minute AT TIME ZONE 'UTC' AND ` + d + ` >= $3
		ORDER BY ` + d + ` DESC LIMIT $4)`
}

// runMicros is an attempt's run time in microseconds in SQL, as
// queue.RunMicros computes it and the slowest-attempt indexes hold it.
func runMicros(started, finished string) string {
	return `(extract(epoch FROM ` + finished + ` - coalesce(` + started + `, ` + finished + `)) * 1000000)::bigint`
}

func (r slowestSource) Longest(ctx context.Context, from, to time.Time, atLeast int64, limit int) ([]queue.AttemptStat, error) {
	rows, err := r.s.pool.Query(ctx, longest, from, to, atLeast, limit)
	if err != nil {
		return nil, err
	}
	return collect(rows, func(r pgx.CollectableRow) (a queue.AttemptStat, err error) {
		var outcome string
		var d int64
		err = r.Scan(&a.JobID, &a.Queue, &outcome, &d, &a.FinishedAt)
		a.Outcome, a.Duration, a.FinishedAt = queue.Outcome(outcome), time.Duration(d)*time.Microsecond, a.FinishedAt.UTC()
		return a, err
	})
}
