package postgres

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/queuectl/queuectl/queue"
)

// claimSQL returns the claim statement. The CTE walks jobs_claim (one
// queue: jobs_claim_queue) in claim order, skipping rows another claimer
// has locked; the UPDATE takes them in the same statement. The limit is a
// parameter (the last), and a literal bound of it, the next power of two,
// caps the rows the planner expects: even a generic plan of the prepared
// statement then knows how few rows the CTE yields and joins them through
// the primary key (with the parameter alone it may plan to hash the whole
// table), and a worker's claims share a handful of prepared statements
// instead of one per limit: PostgreSQL plans each prepared statement anew
// for its first five runs, so with one per limit most claims of a busy
// worker were planned. Its parameters: $1 now, $2 worker, $3 lease until,
// then $4 the queue (one) or the queues (several), then the limit. The
// lease starts at the database's now(), for $3 - $1
// (queue.DatabaseClock). It leaves paused and limited queues alone
// (claimLimited takes from the limited ones).
func claimSQL(queues []string, limit int) string {
	filter, order, limitParam := steeredGuard, claimOrder, "$4"
	switch {
	case len(queues) == 1:
		filter, order, limitParam = oneQueueFilter("$4"), oneQueueOrder, "$5"
	case len(queues) > 1:
		filter, limitParam = " AND queue = ANY($4)"+steeredGuard, "$5"
	}
	return `WITH c AS (SELECT * FROM (
		SELECT id, run_at, state FROM jobs
		WHERE state IN ('pending', 'failed') AND run_at <= $1` + filter + `
		ORDER BY ` + order + `
		LIMIT ` + limitParam + `
		FOR UPDATE SKIP LOCKED) c LIMIT ` + strconv.Itoa(limitBound(limit)) + `)` + claimUpdate("c")
}

// limitBound is the least power of two at or above n.
func limitBound(n int) int {
	b := 1
	for b < n {
		b *= 2
	}
	return b
}

// claimUpdate ends a claim statement: it moves the jobs the CTE named from
// picked (their id, run_at and state) to processing, counts the moves
// (countMoves) and their start delays (run_at to start) into
// start_delay_totals, one upsert per queue and bucket for the whole claim
// (the per-row trigger that did it went in migration 9), and returns the
// jobs' columns, then seq.
func claimUpdate(from string) string {
	return `,
	u AS (
		UPDATE jobs j SET state = 'processing', attempts = j.attempts + 1, worker = $2, started_at = $1,
			finished_at = NULL, lease_until = now() + ($3::timestamptz - $1::timestamptz), updated_at = $1,
			cancel_requested = false
		FROM ` + from + ` WHERE j.id = ` + from + `.id
		RETURNING ` + jobColumns("j.") + `, j.seq),
	moved AS (SELECT u.queue, p.state AS was, u.state AS became FROM u JOIN ` + from + ` p ON p.id = u.id),
	` + countMoves + `,
	counted AS (
		INSERT INTO start_delay_totals AS t (queue, le_us, shard, n, sum_us)
		SELECT d.queue, (SELECT min(le_us) FROM metric_buckets WHERE le_us >= d.us), pg_backend_pid(), count(*), sum(d.us)
		FROM (SELECT u.queue, greatest(0, (extract(epoch FROM u.started_at - p.run_at) * 1000000)::bigint) AS us
			FROM u JOIN ` + from + ` p ON p.id = u.id) d
		GROUP BY 1, 2
		ON CONFLICT (queue, le_us, shard) DO UPDATE SET n = t.n + excluded.n, sum_us = t.sum_us + excluded.sum_us)
	SELECT * FROM u`
}

// claimOrder is the order jobs are claimed in: jobs_claim's.
const claimOrder = `priority DESC, run_at, created_at, seq`

// oneQueueFilter keeps a claim to one queue (the parameter param) unless
// it is paused or limited: a check made once (an InitPlan), not per row.
// The queue is matched as a range of one value, and the claim ordered by
// oneQueueOrder (queue first), so that jobs_claim_queue is the only index
// that yields the order. With queue = param the planner drops the queue
// from the order (it is constant), and then, where the statistics say no
// job is runnable (taken while the queue was drained), both claim indexes
// cost the same and it may walk jobs_claim, reading past every other
// queue's runnable jobs.
func oneQueueFilter(param string) string {
	return ` AND queue >= ` + param + ` AND queue <= ` + param + ` AND NOT EXISTS (SELECT 1 FROM queue_controls qc WHERE qc.name = ` + param + `
			AND (qc.paused OR qc.max_running > 0 OR qc.rate_limit > 0))`
}

// oneQueueOrder is claimOrder for a claim from one queue (oneQueueFilter).
const oneQueueOrder = `queue, ` + claimOrder

func claimArgs(p queue.ClaimParams) []any {
	args := []any{p.Now, p.Worker, p.LeaseUntil}
	switch {
	case len(p.Queues) == 1:
		args = append(args, p.Queues[0])
	case len(p.Queues) > 1:
		args = append(args, p.Queues)
	}
	return append(args, p.Limit)
}

// ClaimJobs implements queue.Store.
func (s *Store) ClaimJobs(ctx context.Context, p queue.ClaimParams) ([]*queue.Job, error) {
	if p.Limit <= 0 {
		return nil, nil
	}
	limited, err := s.limitedIn(ctx, p.Queues)
	if err != nil {
		return nil, fmt.Errorf("claim jobs: %w", err)
	}
	var jobs []*queue.Job
	if len(limited) > 0 {
		jobs, err = s.claimLimited(ctx, p, limited)
	} else {
		jobs, err = s.claim(ctx, p)
	}
	if err != nil {
		return nil, fmt.Errorf("claim jobs: %w", err)
	}
	return jobs, nil
}

// claimSettings, queued in front of a claim, makes its transaction commit
// asynchronously (worktx.go) and plans the claim without sorts. The
// statistics of a queue's table are stale by nature: taken while it was
// drained, they make a burst of runnable jobs look like a handful, and the
// planner then reads all of them and sorts them for every claim (10 ms a
// claim with 20,000 runnable jobs) instead of walking a claim index in
// order and stopping at the limit. Without sorts, the ordered index scan
// is the only plan left. A sort that cannot be avoided (the limited
// claim's merge of its parts, controls.go; countMoves' order) is still
// made, but its plan then costs more than jit_above_cost, and compiling
// it took 400 ms per claim: claims never use JIT.
const claimSettings = `SELECT set_config('synchronous_commit', 'off', true), ` + claimPlanning

// claimPlanning is claimSettings' part that shapes plans.
const claimPlanning = `set_config('enable_sort', 'off', true), set_config('jit', 'off', true)`

// claim runs the claim statement in a worker transaction (worktx.go): one
// pipelined batch, one round trip.
func (s *Store) claim(ctx context.Context, p queue.ClaimParams) ([]*queue.Job, error) {
	b := &pgx.Batch{}
	b.Queue(claimSettings)
	b.Queue(claimSQL(p.Queues, p.Limit), claimArgs(p)...)
	br := s.pool.SendBatch(ctx, b)
	defer br.Close()
	if _, err := br.Exec(); err != nil {
		return nil, err
	}
	rows, err := br.Query()
	if err != nil {
		return nil, err
	}
	jobs, err := scanClaimed(rows)
	if err != nil {
		return nil, err
	}
	return jobs, br.Close()
}

// scanClaimed reads claimed jobs (their columns, then seq) in claim order:
// RETURNING does not keep the CTE's order.
func scanClaimed(rows pgx.Rows) ([]*queue.Job, error) {
	defer rows.Close()
	type claimed struct {
		job *queue.Job
		seq int64
	}
	var got []claimed
	for rows.Next() {
		var c claimed
		var err error
		if c.job, err = scanJob(rows, &c.seq); err != nil {
			return nil, err
		}
		got = append(got, c)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
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

// NextRunAt implements queue.Store. The earliest run time is the least of
// each queue's first entry in jobs_runnable_at (queue, run_at): the named
// queues, or every runnable queue found by a skip scan. Paused queues hold
// no runnable work.
func (s *Store) NextRunAt(ctx context.Context, queues []string) (time.Time, error) {
	query, args := nextRunSQL(queues)
	var next *time.Time
	if err := s.pool.QueryRow(ctx, query, args...).Scan(&next); err != nil {
		return time.Time{}, fmt.Errorf("next run time: %w", err)
	}
	return utc(next), nil
}

// nextRunSQL returns NextRunAt's statement and its arguments.
func nextRunSQL(queues []string) (string, []any) {
	const earliest = `
	SELECT min((SELECT j.run_at FROM jobs j WHERE j.state IN ('pending', 'failed') AND j.queue = q.queue
		ORDER BY j.run_at LIMIT 1))`
	const unpaused = `NOT EXISTS (SELECT 1 FROM queue_controls qc WHERE qc.name = q.queue AND qc.paused)`
	if len(queues) > 0 {
		return earliest + ` FROM unnest($1::text[]) AS q(queue) WHERE ` + unpaused, []any{queues}
	}
	return runnableQueuesCTE + earliest + ` FROM q WHERE q.queue IS NOT NULL AND ` + unpaused, nil
}
