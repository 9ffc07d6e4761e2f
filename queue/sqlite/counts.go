package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"strings"

	"github.com/queuectl/queuectl/queue"
)

// The monitoring counters (the counters table, read through the views
// job_counts, start_delay_totals and attempt_totals) and the run-time
// histograms of statistics (run_slots, see queue.RunTimeParams) are kept
// by the write transactions themselves: every statement that inserts, deletes or moves a
// job, claims one or records an attempt notes the change in the
// transaction's tally, and write adds the tally to the counters in the same
// transaction, just before it commits. A transaction pays one upsert
// statement, and one more when it finished attempts, whatever the number
// of jobs it touched (per-row triggers,
// which kept them until migration 10, paid three upserts per claimed or
// finished job). Readers see the counters and the jobs change together, in
// every process.
//
// Staged jobs (a bulk import not yet published) are not counted: nothing
// shows them, and publishing counts them as they become pending.

// stateStaged is the state of a bulk import's jobs before publishing; no
// reader outside this package sees it.
const stateStaged queue.State = "staged"

type countKey struct{ queue, state string }

type totalKey struct {
	queue, outcome string
	le             int64
}

type total struct{ n, sum int64 }

// slotSpans are the run-time histograms' slot lengths in microseconds
// (run_slots.span): every finished attempt counts in a minute and an hour.
var slotSpans = [...]int64{queue.MinuteSlot.Microseconds(), queue.HourSlot.Microseconds()}

type slotKey struct {
	span, slot   int64
	queue, class string
	le           int64
}

type slotCount struct{ n, min, max int64 }

// tally is what one write transaction changes in the counters. The zero
// value is empty; write resets it before each try.
type tally struct {
	jobs     map[countKey]int64
	starts   map[totalKey]total
	attempts map[totalKey]total
	slots    map[slotKey]slotCount
}

func (t *tally) reset() {
	clear(t.jobs)
	clear(t.starts)
	clear(t.attempts)
	clear(t.slots)
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
	k := totalKey{queue: q, le: queue.MetricBucket(delayUS)}
	v := t.starts[k]
	t.starts[k] = total{v.n + 1, v.sum + delayUS}
}

// attempt counts a finished attempt of a job of queue q that ran for runUS
// and ended at endUS.
func (t *tally) attempt(q string, outcome queue.Outcome, runUS, endUS int64) {
	if t.attempts == nil {
		t.attempts = map[totalKey]total{}
		t.slots = map[slotKey]slotCount{}
	}
	k := totalKey{q, string(outcome), queue.MetricBucket(runUS)}
	v := t.attempts[k]
	t.attempts[k] = total{v.n + 1, v.sum + runUS}
	class, le := string(queue.OutcomeClass(outcome)), queue.RunTimeBucket(runUS)
	for _, span := range slotSpans {
		k := slotKey{span, endUS - endUS%span, q, class, le}
		if c, ok := t.slots[k]; ok {
			t.slots[k] = slotCount{c.n + 1, min(c.min, runUS), max(c.max, runUS)}
		} else {
			t.slots[k] = slotCount{1, runUS, runUS}
		}
	}
}

// flush adds the tally to the counters table, and the attempts it counted
// to run_slots: a statement each.
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
	err := upsert(ctx, s, tx, `INSERT INTO counters (queue, kind, key, le_us, n, sum_us) VALUES %s
		ON CONFLICT (queue, kind, key, le_us) DO UPDATE SET n = n + excluded.n, sum_us = sum_us + excluded.sum_us`, 6, args)
	if err != nil || len(t.slots) == 0 {
		return err
	}
	args = args[:0]
	for k, c := range t.slots {
		args = append(args, k.span, k.slot, k.queue, k.class, k.le, c.n, c.min, c.max)
	}
	return upsert(ctx, s, tx, `INSERT INTO run_slots (span, slot, queue, class, le_us, n, min_us, max_us) VALUES %s
		ON CONFLICT (span, slot, queue, class, le_us) DO UPDATE SET n = n + excluded.n,
			min_us = min(min_us, excluded.min_us), max_us = max(max_us, excluded.max_us)`, 8, args)
}

// maxUpsertRows bounds the rows of one upsert statement, and so its
// parameters, far below SQLite's limit.
const maxUpsertRows = 512

// upsert runs query (an INSERT with %s for its VALUES) on args, width
// values a row, in statements of at most maxUpsertRows rows.
func upsert(ctx context.Context, s *Store, tx *sql.Tx, query string, width int, args []any) error {
	defer func(all []any) { s.countArgs = all[:0] }(args)
	row := "(?" + strings.Repeat(", ?", width-1) + "), "
	for len(args) > 0 {
		part := args[:min(len(args), maxUpsertRows*width)]
		args = args[len(part):]
		st, err := s.stmt(ctx, tx, fmt.Sprintf(query, strings.TrimSuffix(strings.Repeat(row, len(part)/width), ", ")))
		if err != nil {
			return err
		}
		if _, err := st.ExecContext(ctx, part...); err != nil {
			return err
		}
	}
	return nil
}
