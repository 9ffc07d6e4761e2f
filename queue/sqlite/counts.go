package sqlite

import (
	"context"
	"database/sql"
	"strings"

	"github.com/queuectl/queuectl/queue"
)

// The monitoring counters (the counters table, read through the views
// job_counts, start_delay_totals and attempt_totals) are kept by the write
// transactions themselves: every statement that inserts, deletes or moves a
// job, claims one or records an attempt notes the change in the
// transaction's tally, and write adds the tally to the counters in the same
// transaction, just before it commits. A transaction pays one upsert
// statement, whatever the number of jobs it touched (per-row triggers,
// which kept them until migration 10, paid three upserts per claimed or
// finished job). Readers see the counters and the jobs change together, in
// every process.
//
// Staged jobs (a bulk import not yet published) are not counted: nothing
// shows them, and publishing counts them as they become pending.

// metricBuckets are the histograms' upper bounds in microseconds, the
// metric_buckets table of migration 3; the last is unbounded.
var metricBuckets = [...]int64{5000, 10000, 25000, 50000, 100000, 250000, 500000, 1000000, 2500000,
	5000000, 10000000, 30000000, 60000000, 120000000, 300000000, 600000000, 1800000000, 3600000000,
	1<<63 - 1}

// bucket is the upper bound of the histogram bucket that holds us.
func bucket(us int64) int64 {
	for _, le := range metricBuckets {
		if us <= le {
			return le
		}
	}
	return metricBuckets[len(metricBuckets)-1]
}

// stateStaged is the state of a bulk import's jobs before publishing; no
// reader outside this package sees it.
const stateStaged queue.State = "staged"

type countKey struct{ queue, state string }

type totalKey struct {
	queue, outcome string
	le             int64
}

type total struct{ n, sum int64 }

// tally is what one write transaction changes in the counters. The zero
// value is empty; write resets it before each try.
type tally struct {
	jobs     map[countKey]int64
	starts   map[totalKey]total
	attempts map[totalKey]total
}

func (t *tally) reset() {
	clear(t.jobs)
	clear(t.starts)
	clear(t.attempts)
}

// move counts a job of queue q leaving state from and entering state to;
// "" is no state (inserted, deleted).
func (t *tally) move(q string, from, to queue.State) {
	if from == to {
		return
	}
	if t.jobs == nil {
		t.jobs = map[countKey]int64{}
	}
	if from != "" && from != stateStaged {
		t.jobs[countKey{q, string(from)}]--
	}
	if to != "" && to != stateStaged {
		t.jobs[countKey{q, string(to)}]++
	}
}

// start counts a claim of a job of queue q that was due delayUS ago.
func (t *tally) start(q string, delayUS int64) {
	if t.starts == nil {
		t.starts = map[totalKey]total{}
	}
	delayUS = max(0, delayUS)
	k := totalKey{queue: q, le: bucket(delayUS)}
	v := t.starts[k]
	t.starts[k] = total{v.n + 1, v.sum + delayUS}
}

// attempt counts a finished attempt of a job of queue q that ran for runUS.
func (t *tally) attempt(q string, outcome queue.Outcome, runUS int64) {
	if t.attempts == nil {
		t.attempts = map[totalKey]total{}
	}
	k := totalKey{q, string(outcome), bucket(runUS)}
	v := t.attempts[k]
	t.attempts[k] = total{v.n + 1, v.sum + runUS}
}

// flush adds the tally to the counters table: one statement.
func (t *tally) flush(ctx context.Context, s *Store, tx *sql.Tx) error {
	args := s.countArgs[:0]
	for k, n := range t.jobs {
		if n != 0 {
			args = append(args, k.queue, "jobs", k.state, 0, n, 0)
		}
	}
	for k, v := range t.starts {
		args = append(args, k.queue, "start", "", k.le, v.n, v.sum)
	}
	for k, v := range t.attempts {
		args = append(args, k.queue, "run", k.outcome, k.le, v.n, v.sum)
	}
	if len(args) == 0 {
		return nil
	}
	s.countArgs = args[:0]
	rows := strings.TrimSuffix(strings.Repeat("(?, ?, ?, ?, ?, ?), ", len(args)/6), ", ")
	st, err := s.stmt(ctx, tx, `INSERT INTO counters (queue, kind, key, le_us, n, sum_us) VALUES `+rows+`
		ON CONFLICT (queue, kind, key, le_us) DO UPDATE SET n = n + excluded.n, sum_us = sum_us + excluded.sum_us`)
	if err != nil {
		return err
	}
	_, err = st.ExecContext(ctx, args...)
	return err
}
