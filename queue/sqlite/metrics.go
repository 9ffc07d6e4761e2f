package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/queuectl/queuectl/queue"
)

// Metrics implements queue.Store: the totals the write transactions keep
// (counts.go), and one index seek per queue for its oldest due job.
func (s *Store) Metrics(ctx context.Context, now time.Time) (*queue.Metrics, error) {
	m := &queue.Metrics{OldestPending: map[string]time.Time{}}
	var err error
	if m.RunTimes, err = s.totals(ctx, `SELECT queue, outcome, le_us, n, sum_us FROM attempt_totals ORDER BY queue, outcome, le_us`); err != nil {
		return nil, fmt.Errorf("metrics: run times: %w", describe(err))
	}
	if m.StartDelays, err = s.totals(ctx, `SELECT queue, '', le_us, n, sum_us FROM start_delay_totals ORDER BY queue, le_us`); err != nil {
		return nil, fmt.Errorf("metrics: start delays: %w", describe(err))
	}
	// Walk the queues with pending jobs by index seeks (a DISTINCT would
	// read every pending entry), at most maxMetricQueues of them.
	q := ""
	for range maxMetricQueues {
		var next sql.NullString
		err := s.readDB.QueryRowContext(ctx, `SELECT min(queue) FROM jobs INDEXED BY jobs_pending_run_at
			WHERE state = 'pending' AND queue > ?`, q).Scan(&next)
		if err != nil {
			return nil, fmt.Errorf("metrics: queues: %w", describe(err))
		}
		if !next.Valid {
			break
		}
		q = next.String
		var oldest sql.NullInt64
		err = s.readDB.QueryRowContext(ctx, `SELECT min(run_at) FROM jobs INDEXED BY jobs_pending_run_at
			WHERE state = 'pending' AND queue = ? AND run_at <= ?`, q, toUS(now)).Scan(&oldest)
		if err != nil {
			return nil, fmt.Errorf("metrics: oldest pending: %w", describe(err))
		}
		if oldest.Valid {
			m.OldestPending[q] = fromUS(oldest.Int64)
		}
	}
	return m, nil
}

// maxMetricQueues bounds the queues a scrape reports the oldest job of.
const maxMetricQueues = 1000

func (s *Store) totals(ctx context.Context, query string) ([]queue.MetricTotal, error) {
	rows, err := s.readDB.QueryContext(ctx, query)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []queue.MetricTotal
	for rows.Next() {
		var t queue.MetricTotal
		var outcome string
		var le, sum int64
		if err := rows.Scan(&t.Queue, &outcome, &le, &t.N, &sum); err != nil {
			return nil, err
		}
		t.Outcome = queue.Outcome(outcome)
		t.LE, t.Sum = usDuration(le), usDuration(sum)
		out = append(out, t)
	}
	return out, rows.Err()
}

// usDuration converts microseconds to a Duration, saturating the
// unbounded bucket's bound at math.MaxInt64.
func usDuration(us int64) time.Duration {
	if us > int64(1<<63-1)/int64(time.Microsecond) {
		return time.Duration(1<<63 - 1)
	}
	return time.Duration(us) * time.Microsecond
}
