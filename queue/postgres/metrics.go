package postgres

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/queuectl/queuectl/queue"
)

// maxMetricQueues bounds the queues a scrape reports the oldest job of.
const maxMetricQueues = 1000

// totals is a table of counter rows that each backend counts into rows of
// its own (shard = its process id), by keys, adding to the columns sums.
type totals struct {
	table, keys string
	sums        []string
}

var (
	attemptTotals    = totals{"attempt_totals", "queue, outcome, le_us", []string{"n", "sum_us"}}
	startDelayTotals = totals{"start_delay_totals", "queue, le_us", []string{"n", "sum_us"}}
	jobTotals        = totals{"job_totals", "queue, state", []string{"n"}}
)

// fold is the statement that moves the counter rows of backends that hold
// none of them now into shard 0. SKIP LOCKED leaves a row a transaction is
// counting into alone, and only folds (serialised by the advisory lock)
// touch shard 0, so a fold never waits for a worker and no worker
// deadlocks with it.
func (t totals) fold() string {
	sums, adds := make([]string, len(t.sums)), make([]string, len(t.sums))
	for i, c := range t.sums {
		sums[i] = fmt.Sprintf("sum(%s)", c)
		adds[i] = fmt.Sprintf("%[1]s = t.%[1]s + excluded.%[1]s", c)
	}
	cols := strings.Join(t.sums, ", ")
	return fmt.Sprintf(`WITH folded AS (
		DELETE FROM %[1]s WHERE ctid IN (SELECT ctid FROM %[1]s WHERE shard <> 0 FOR UPDATE SKIP LOCKED)
		RETURNING %[2]s, %[3]s)
	INSERT INTO %[1]s AS t (%[2]s, shard, %[3]s)
	SELECT %[2]s, 0, %[4]s FROM folded GROUP BY %[2]s ORDER BY %[2]s
	ON CONFLICT (%[2]s, shard) DO UPDATE SET %[5]s`, t.table, t.keys, cols, strings.Join(sums, ", "), strings.Join(adds, ", "))
}

// fold folds the counter rows of ts (see totals.fold), unless another fold
// is under way.
func (s *Store) fold(ctx context.Context, ts ...totals) error {
	return pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		var locked bool
		err := tx.QueryRow(ctx, `SELECT pg_try_advisory_xact_lock(hashtextextended('queuectl-metrics:' || current_schema(), 0))`).Scan(&locked)
		if err != nil || !locked {
			return err
		}
		for _, t := range ts {
			if _, err := tx.Exec(ctx, t.fold()); err != nil {
				return err
			}
		}
		return nil
	})
}

// Metrics implements queue.Store: the totals the triggers of migration 3
// keep, and one index seek per queue for its oldest due job.
func (s *Store) Metrics(ctx context.Context, now time.Time) (*queue.Metrics, error) {
	err := s.fold(ctx, attemptTotals, startDelayTotals, jobTotals)
	if err != nil {
		return nil, fmt.Errorf("metrics: fold totals: %w", err)
	}
	m := &queue.Metrics{OldestPending: map[string]time.Time{}}
	if m.RunTimes, err = s.totals(ctx, `SELECT queue, outcome, le_us, sum(n)::bigint, sum(sum_us)::bigint FROM attempt_totals
		GROUP BY queue, outcome, le_us ORDER BY queue, outcome, le_us`); err != nil {
		return nil, fmt.Errorf("metrics: run times: %w", err)
	}
	if m.StartDelays, err = s.totals(ctx, `SELECT queue, '', le_us, sum(n)::bigint, sum(sum_us)::bigint FROM start_delay_totals
		GROUP BY queue, le_us ORDER BY queue, le_us`); err != nil {
		return nil, fmt.Errorf("metrics: start delays: %w", err)
	}
	// Walk the queues with pending jobs by index seeks (a DISTINCT would
	// read every pending entry), at most maxMetricQueues of them.
	q := ""
	for range maxMetricQueues {
		var next *string
		var oldest *time.Time
		err := s.pool.QueryRow(ctx, `WITH q AS (SELECT min(queue) AS queue FROM jobs WHERE state = 'pending' AND queue > $1)
			SELECT q.queue, (SELECT min(run_at) FROM jobs WHERE state = 'pending' AND queue = q.queue AND run_at <= $2)
			FROM q`, q, now).Scan(&next, &oldest)
		if err != nil {
			return nil, fmt.Errorf("metrics: oldest pending: %w", err)
		}
		if next == nil {
			break
		}
		q = *next
		if oldest != nil {
			m.OldestPending[q] = oldest.UTC()
		}
	}
	return m, nil
}

func (s *Store) totals(ctx context.Context, query string) ([]queue.MetricTotal, error) {
	rows, err := s.pool.Query(ctx, query)
	if err != nil {
		return nil, err
	}
	var out []queue.MetricTotal
	var t queue.MetricTotal
	var outcome string
	var le, sum int64
	_, err = pgx.ForEachRow(rows, []any{&t.Queue, &outcome, &le, &t.N, &sum}, func() error {
		t.Outcome = queue.Outcome(outcome)
		t.LE, t.Sum = usDuration(le), time.Duration(sum)*time.Microsecond
		out = append(out, t)
		return nil
	})
	return out, err
}

// usDuration converts microseconds to a Duration, saturating the
// unbounded bucket's bound at math.MaxInt64.
func usDuration(us int64) time.Duration {
	if us > int64(1<<63-1)/int64(time.Microsecond) {
		return time.Duration(1<<63 - 1)
	}
	return time.Duration(us) * time.Microsecond
}
