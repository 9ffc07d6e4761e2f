package postgres

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/queuectl/queuectl/queue"
	"github.com/queuectl/queuectl/queue/internal/storekit"
)

// finishAll applies a batch of finishes in one statement: f holds them
// column by column ($1..$27, one array each, unnested side by side). A
// job's row changes only if its claim still holds (see queue's lifecycle
// for the races it settles) and, only then, gets its history row (in the
// batch's order) and loses its live output (the whole output is now in the
// history). The final attempt of a job that finishes ($28, see inline)
// is kept on the job's own row (migration 21), any other in attempts.
// With a cancel request pending the job takes the alternative the
// lifecycle decided ($22, $23). The attempts it records are counted in the
// same statement (countFinished). It returns the ids it applied.
const finishAll = `WITH f AS (
		SELECT * FROM unnest($1::text[], $2::int[], $3::timestamptz[], $4::timestamptz[], $5::int[], $6::text[],
			$7::timestamptz[], $8::text[], $9::text[], $10::int[], $11::int[], $12::timestamptz[], $13::timestamptz[],
			$14::int[], $15::text[], $16::text[], $17::text[], $18::text[], $19::bytea[], $20::bigint[],
			$21::timestamptz[], $22::text[], $23::text[], $24::int[], $25::bigint[], $26::bigint[], $27::bigint[],
			$28::bool[])
		WITH ORDINALITY AS f(state, attempts, run_at, finished_at, exit_code, error, now, id, worker, attempt,
			number, a_started, a_finished, a_exit, signal, outcome, a_worker, a_error, output, dropped,
			expired_by, c_state, c_error, uncharged, run_us, metric_le, run_le, inline, ord)),
	u AS (
		UPDATE jobs j SET
			state = CASE WHEN j.cancel_requested THEN f.c_state ELSE f.state END,
			attempts = f.attempts, run_at = f.run_at, finished_at = f.finished_at, exit_code = f.exit_code,
			error = CASE WHEN j.cancel_requested THEN f.c_error ELSE f.error END,
			updated_at = f.now, lease_until = NULL, cancel_requested = false, uncharged = f.uncharged,
			last_started_at = CASE WHEN f.inline THEN f.a_started END, last_outcome = CASE WHEN f.inline THEN f.outcome::attempt_outcome END,
			last_signal = CASE WHEN f.inline THEN f.signal END, last_output = CASE WHEN f.inline THEN f.output END,
			last_dropped = CASE WHEN f.inline THEN nullif(f.dropped, 0) END
		FROM f
		WHERE j.id = f.id AND j.worker = f.worker AND j.attempts = f.attempt AND j.state = 'processing'
			AND (f.expired_by IS NULL OR j.lease_until <= f.expired_by)
		RETURNING j.id, j.queue, j.state, f.inline),
	moved AS (SELECT queue, 'processing'::text AS was, state AS became FROM u),
	` + countMoves + `,
	live AS (DELETE FROM live_output WHERE job_id IN (SELECT id FROM u)),
	timed AS MATERIALIZED (SELECT u.queue, f.outcome, f.a_finished AS finished_at, f.run_us AS d, f.metric_le, f.run_le
		FROM f JOIN u ON u.id = f.id),
	` + countFinished + `,
	history AS (INSERT INTO attempts (job_id, number, started_at, finished_at, exit_code, signal, outcome, worker, error,
			output, dropped)
		SELECT f.id, f.number, f.a_started, f.a_finished, f.a_exit, f.signal, f.outcome, f.a_worker, f.a_error,
			f.output, f.dropped
		FROM f JOIN u ON u.id = f.id WHERE NOT u.inline ORDER BY f.ord)
	SELECT id FROM u`

// countFinished counts the finished attempts of CTE timed (queue,
// outcome, finished_at, d: the run time in microseconds, metric_le and
// run_le: its buckets in metric_buckets and run_buckets) in the monitoring
// totals (attempt_totals) and in the run-time histograms (run_slots, by
// minute and hour of the end): two CTEs to put in a WITH after timed. The
// finish computes each attempt's run time and buckets in Go
// (queue.RunMicros, queue.MetricBucket, queue.RunTimeBucket), where they
// cost nothing, rather than with two index lookups per attempt; an import
// computes them in SQL (timedAttempts). Its histogram rows are locked in
// key order, as a deletion locks them (admin.go), and each backend counts
// into monitoring rows of its own (shard = its process id).
const countFinished = `totals AS (
		INSERT INTO attempt_totals AS t (queue, outcome, le_us, shard, n, sum_us)
		SELECT queue, outcome, metric_le, pg_backend_pid(), count(*), sum(d) FROM timed GROUP BY queue, outcome, metric_le
		ON CONFLICT (queue, outcome, le_us, shard) DO UPDATE SET n = t.n + excluded.n, sum_us = t.sum_us + excluded.sum_us),
	runs AS (
		INSERT INTO run_slots AS r (span, slot, queue, class, le_us, n, min_us, max_us)
		SELECT s.span, date_trunc(s.span, t.finished_at AT TIME ZONE 'UTC') AT TIME ZONE 'UTC', t.queue,
			CASE WHEN t.outcome IN ('succeeded', 'interrupted') THEN t.outcome ELSE 'failed' END, t.run_le, count(*), min(t.d), max(t.d)
		FROM timed t CROSS JOIN (VALUES ('minute'), ('hour')) s(span)
		GROUP BY 1, 2, 3, 4, 5 ORDER BY 1, 2, 3, 4, 5
		ON CONFLICT (span, slot, queue, class, le_us) DO UPDATE
			SET n = r.n + excluded.n, min_us = least(r.min_us, excluded.min_us), max_us = greatest(r.max_us, excluded.max_us))`

// timedAttempts is CTE timed (countFinished) for the attempts of CTE a
// (queue, outcome, started_at, finished_at), computed as RunMicros and the
// buckets are.
var timedAttempts = `timed AS MATERIALIZED (
		SELECT a.queue, a.outcome, a.finished_at, d.d, (SELECT min(le_us) FROM metric_buckets WHERE le_us >= d.d) AS metric_le,
			(SELECT min(le_us) FROM run_buckets WHERE le_us >= d.d) AS run_le
		FROM a, LATERAL (SELECT ` + runMicros("a.started_at", "a.finished_at") + ` AS d) d)`

// finishColumns are finishAll's parameters.
type finishColumns struct {
	state, id, worker, outcome, cState   []string
	attempts, attempt, number, uncharged []int
	exitCode, aExit                      []*int
	errs, signal, aWorker, aErr, cErr    []*string
	runAt, finishedAt, now, aFinished    []time.Time
	aStarted, expiredBy                  []*time.Time
	output                               [][]byte
	dropped, runUS, metricLE, runLE      []int64
	inline                               []bool
}

func (c *finishColumns) add(f queue.Finish) {
	r := f.Record
	cState, cErr := f.IfCancelRequested()
	c.state = append(c.state, string(f.State))
	c.attempts = append(c.attempts, f.Attempts)
	c.runAt = append(c.runAt, f.RunAt)
	c.finishedAt = append(c.finishedAt, r.FinishedAt)
	c.exitCode = append(c.exitCode, f.ExitCode)
	c.errs = append(c.errs, nullStr(f.Error))
	c.now = append(c.now, f.Now)
	c.id = append(c.id, f.JobID)
	c.worker = append(c.worker, f.Worker)
	c.attempt = append(c.attempt, f.Attempt)
	c.number = append(c.number, r.Number)
	c.aStarted = append(c.aStarted, nullTimePtr(r.StartedAt))
	c.aFinished = append(c.aFinished, r.FinishedAt)
	c.aExit = append(c.aExit, r.ExitCode)
	c.signal = append(c.signal, nullStr(r.Signal))
	c.outcome = append(c.outcome, string(r.Outcome))
	c.aWorker = append(c.aWorker, nullStr(r.Worker))
	c.aErr = append(c.aErr, nullStr(r.Error))
	c.output = append(c.output, r.Output)
	c.dropped = append(c.dropped, r.Dropped)
	c.expiredBy = append(c.expiredBy, nullTimePtr(f.LeaseExpiredBy))
	c.cState = append(c.cState, string(cState))
	c.cErr = append(c.cErr, nullStr(cErr))
	c.uncharged = append(c.uncharged, f.Uncharged)
	us := queue.RunMicros(r)
	c.runUS = append(c.runUS, us)
	c.metricLE = append(c.metricLE, queue.MetricBucket(us))
	c.runLE = append(c.runLE, queue.RunTimeBucket(us))
	c.inline = append(c.inline, inline(f))
}

// inline reports whether f's attempt is kept on its job's row
// (storekit.FinalOnRow) in a column of type attempt_outcome.
func inline(f queue.Finish) bool {
	return storekit.FinalOnRow(f) && slices.Contains(rowOutcomes, f.Record.Outcome)
}

// rowOutcomes are the values of the type attempt_outcome (migration 21),
// the outcomes a job's row can hold: an attempt with any other goes to
// attempts, whose outcome is text.
var rowOutcomes = []queue.Outcome{queue.OutcomeSucceeded, queue.OutcomeFailed, queue.OutcomeTimedOut, queue.OutcomeLost,
	queue.OutcomeCancelled, queue.OutcomeInterrupted}

func (c *finishColumns) args() []any {
	return []any{c.state, c.attempts, c.runAt, c.finishedAt, c.exitCode, c.errs, c.now, c.id, c.worker, c.attempt,
		c.number, c.aStarted, c.aFinished, c.aExit, c.signal, c.outcome, c.aWorker, c.aErr, c.output, c.dropped,
		c.expiredBy, c.cState, c.cErr, c.uncharged, c.runUS, c.metricLE, c.runLE, c.inline}
}

func nullStr(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

func nullTimePtr(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	return &t
}

// finishRounds splits a batch into statements: a job's first finish goes
// in the first, its second (a batch may hold a worker's and a rescuer's)
// in the second, and so on, so that each statement sees the ones before it
// as separate statements did. Nearly always there is one.
func finishRounds(fs []queue.Finish) [][]int {
	var rounds [][]int
	seen := make(map[string]int, len(fs))
	for i, f := range fs {
		r := seen[f.JobID]
		seen[f.JobID] = r + 1
		if r == len(rounds) {
			rounds = append(rounds, nil)
		}
		rounds[r] = append(rounds[r], i)
	}
	return rounds
}

// FinishJobs implements queue.Store. It is a worker transaction
// (worktx.go): the finishes (one statement for the batch) and the check
// for dependents go in one pipelined batch behind BEGIN, the wake-ups in
// front of COMMIT.
func (s *Store) FinishJobs(ctx context.Context, fs []queue.Finish) ([]bool, error) {
	applied := make([]bool, len(fs))
	if len(fs) == 0 {
		return applied, nil
	}
	runnable := false
	err := s.pipelinedTx(ctx, func(c conn) (*pgx.Batch, error) {
		runnable = false
		rounds := finishRounds(fs)
		b := beginBatch()
		for _, round := range rounds {
			var cols finishColumns
			for _, i := range round {
				cols.add(fs[i])
			}
			b.Queue(finishAll, cols.args()...)
		}
		ids := make([]string, len(fs))
		for i, f := range fs {
			ids[i] = f.JobID
		}
		b.Queue(hasDependents, ids)
		dependents, err := sendFinishes(ctx, c, b, fs, rounds, applied)
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
func sendFinishes(ctx context.Context, c conn, b *pgx.Batch, fs []queue.Finish, rounds [][]int, applied []bool) (bool, error) {
	br := c.SendBatch(ctx, b)
	defer br.Close()
	if err := opened(br); err != nil {
		return false, err
	}
	for _, round := range rounds {
		rows, err := br.Query()
		if err != nil {
			return false, err
		}
		done, err := collect(rows, pgx.RowTo[string])
		if err != nil {
			return false, err
		}
		in := make(map[string]bool, len(done))
		for _, id := range done {
			in[id] = true
		}
		for _, i := range round {
			applied[i] = in[fs[i].JobID]
		}
	}
	var dependents bool
	if err := br.QueryRow().Scan(&dependents); err != nil {
		return false, err
	}
	return dependents, br.Close()
}
