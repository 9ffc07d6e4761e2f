package postgres

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/queuectl/queuectl/queue"
)

// maxMetricQueues bounds the queues a scrape reports the oldest job of.
const maxMetricQueues = 1000

// foldTotals moves the counter rows of backends that hold none of them now
// into shard 0. SKIP LOCKED leaves a row a transaction is counting into
// alone, and only folds (serialised by the advisory lock) touch shard 0, so
// a fold never waits for a worker and no worker deadlocks with it.
const foldTotals = `WITH folded AS (
		DELETE FROM %[1]s WHERE ctid IN (SELECT ctid FROM %[1]s WHERE shard <> 0 FOR UPDATE SKIP LOCKED)
		RETURNING %[2]s, n, sum_us)
	INSERT INTO %[1]s AS t (%[2]s, shard, n, sum_us)
	SELECT %[2]s, 0, sum(n), sum(sum_us) FROM folded GROUP BY %[2]s ORDER BY %[2]s
	ON CONFLICT (%[2]s, shard) DO UPDATE SET n = t.n + excluded.n, sum_us = t.sum_us + excluded.sum_us`

// Metrics implements queue.Store: the totals the triggers of migration 3
// keep, and one index seek per queue for its oldest due job.
func (s *Store) Metrics(ctx context.Context, now time.Time) (*queue.Metrics, error) {
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		var locked bool
		err := tx.QueryRow(ctx, `SELECT pg_try_advisory_xact_lock(hashtextextended('queuectl-metrics:' || current_schema(), 0))`).Scan(&locked)
		if err != nil || !locked {
			return err
		}
		for _, t := range [][2]string{{"attempt_totals", "queue, outcome, le_us"}, {"start_delay_totals", "queue, le_us"}} {
			if _, err := tx.Exec(ctx, fmt.Sprintf(foldTotals, t[0], t[1])); err != nil {
				return err
			}
		}
		return nil
	})
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
