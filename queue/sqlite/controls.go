package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/queuectl/queuectl/queue"
)

const controlColumns = `name, paused, max_running, rate_limit, rate_period_us`

// steered selects the controls that change a claim: paused or limited
// queues (queue.QueueControl.Steered).
const steered = `paused = 1 OR max_running > 0 OR rate_limit > 0`

// steeredControls reads the controls that change a claim. The table is
// small, and an empty one costs a claim one probe.
const steeredControls = `SELECT ` + controlColumns + ` FROM queue_controls WHERE ` + steered

func scanControls(rows *sql.Rows) ([]queue.QueueControl, error) {
	defer rows.Close()
	var out []queue.QueueControl
	for rows.Next() {
		var c queue.QueueControl
		var per int64
		if err := rows.Scan(&c.Name, &c.Paused, &c.MaxRunning, &c.Rate.N, &per); err != nil {
			return nil, err
		}
		c.Rate.Per = time.Duration(per) * time.Microsecond
		out = append(out, c)
	}
	return out, rows.Err()
}

// QueueControls implements queue.Store.
func (s *Store) QueueControls(ctx context.Context) ([]queue.QueueControl, error) {
	rows, err := s.readDB.QueryContext(ctx, `SELECT `+controlColumns+` FROM queue_controls ORDER BY name`)
	if err != nil {
		return nil, fmt.Errorf("queue controls: %w", describe(err))
	}
	cs, err := scanControls(rows)
	if err != nil {
		return nil, fmt.Errorf("queue controls: %w", err)
	}
	return cs, nil
}

// UpdateQueueControls implements queue.Store.
func (s *Store) UpdateQueueControls(ctx context.Context, u queue.ControlUpdate) error {
	if err := u.Check(); err != nil {
		return fmt.Errorf("update queue controls: %w", err)
	}
	err := s.write(ctx, true, func(ctx context.Context, tx *sql.Tx) error { return updateControls(ctx, tx, u) })
	if err != nil {
		return fmt.Errorf("update queue controls: %w", err)
	}
	// A resume or a raised limit may make work runnable.
	s.wake.notify()
	return nil
}

// updateControls applies u to the stored controls in tx.
func updateControls(ctx context.Context, tx *sql.Tx, u queue.ControlUpdate) error {
	for _, name := range u.Names {
		c := queue.QueueControl{Name: name}
		rows, err := tx.QueryContext(ctx, `SELECT `+controlColumns+` FROM queue_controls WHERE name = ?`, name)
		if err != nil {
			return err
		}
		cs, err := scanControls(rows)
		if err != nil {
			return err
		}
		if len(cs) == 1 {
			c = cs[0]
		}
		c = u.Apply(c)
		if !c.Steered() {
			// Neither paused nor limited: no control row, so that a
			// resume of a queue never paused leaves no trace.
			if _, err := tx.ExecContext(ctx, `DELETE FROM queue_controls WHERE name = ?`, name); err != nil {
				return err
			}
			continue
		}
		_, err = tx.ExecContext(ctx, `INSERT INTO queue_controls (`+controlColumns+`) VALUES (?, ?, ?, ?, ?)
			ON CONFLICT (name) DO UPDATE SET paused = excluded.paused, max_running = excluded.max_running,
				rate_limit = excluded.rate_limit, rate_period_us = excluded.rate_period_us`,
			c.Name, c.Paused, c.MaxRunning, c.Rate.N, c.Rate.Per.Microseconds())
		if err != nil {
			return err
		}
	}
	return nil
}

// allowances counts, inside the claim's transaction, how many jobs each
// limited queue of cs may start now. Paused queues get no entry.
func (s *Store) allowances(ctx context.Context, tx *sql.Tx, cs []queue.QueueControl, now time.Time) (map[string]int, error) {
	out := map[string]int{}
	for _, c := range cs {
		if c.Paused {
			continue
		}
		var running, starts int
		// One row of job_counts, which gets this transaction's own moves
		// only at commit: those are in the tally (the outcomes and the
		// claims before this one in a FinishAndClaim).
		count, err := s.stmt(ctx, tx, `SELECT coalesce(sum(n), 0) FROM job_counts WHERE queue = ? AND state = 'processing'`)
		if err != nil {
			return nil, err
		}
		if err := count.QueryRowContext(ctx, c.Name).Scan(&running); err != nil {
			return nil, err
		}
		running += int(s.tally.jobs[countKey{c.Name, string(queue.StateProcessing)}])
		if c.Rate.N > 0 {
			recent, err := s.stmt(ctx, tx, `SELECT count(*) FROM queue_starts WHERE queue = ? AND at > ?`)
			if err != nil {
				return nil, err
			}
			if err := recent.QueryRowContext(ctx, c.Name, toUS(now.Add(-c.Rate.Per))).Scan(&starts); err != nil {
				return nil, err
			}
		}
		out[c.Name] = c.Allowance(running, starts)
	}
	return out, nil
}

// recordStarts notes the starts of rate-limited queues a claim made and
// forgets those older than their period.
func (s *Store) recordStarts(ctx context.Context, tx *sql.Tx, cs []queue.QueueControl, taken map[string]int, now time.Time) error {
	for _, c := range cs {
		if c.Rate.N <= 0 || c.Paused {
			continue
		}
		forget, err := s.stmt(ctx, tx, `DELETE FROM queue_starts WHERE queue = ? AND at <= ?`)
		if err != nil {
			return err
		}
		if _, err := forget.ExecContext(ctx, c.Name, toUS(now.Add(-c.Rate.Per))); err != nil {
			return err
		}
		n := taken[c.Name]
		if n == 0 {
			continue
		}
		note, err := s.stmt(ctx, tx, `INSERT INTO queue_starts (queue, at) VALUES `+strings.TrimSuffix(strings.Repeat("(?, ?), ", n), ", "))
		if err != nil {
			return err
		}
		args := make([]any, 0, 2*n)
		for range n {
			args = append(args, c.Name, toUS(now))
		}
		if _, err := note.ExecContext(ctx, args...); err != nil {
			return err
		}
	}
	return nil
}

// candidate is a runnable job a steered claim may take, with its claim
// order.
type candidate struct {
	rowid     int64
	queue     string
	priority  int
	runAt     int64
	createdAt int64
}

// claimSteered picks the jobs to claim when some queue it may take from is paused or
// limited. It runs in the claim's write transaction, so no other process
// claims meanwhile: it counts each limited queue's running jobs and recent
// starts, reads up to p.Limit candidates from the free queues and up to its
// allowance from each limited queue, and returns the rowids of the first
// p.Limit in claim order.
func (s *Store) claimSteered(ctx context.Context, tx *sql.Tx, p queue.ClaimParams, cs []queue.QueueControl) ([]any, error) {
	allow, err := s.allowances(ctx, tx, cs, p.Now)
	if err != nil {
		return nil, err
	}
	steered := map[string]bool{}
	for _, c := range cs {
		steered[c.Name] = true
	}
	cands, err := s.freeCandidates(ctx, tx, p, cs, steered)
	if err != nil {
		return nil, err
	}
	for _, c := range cs {
		if n := allow[c.Name]; n != 0 && !c.Paused {
			if n < 0 || n > p.Limit {
				n = p.Limit
			}
			got, err := s.candidates(ctx, tx, "jobs_claim_queue", " AND queue = ?", n, []any{toUS(p.Now), c.Name})
			if err != nil {
				return nil, err
			}
			cands = append(cands, got...)
		}
	}
	sort.Slice(cands, func(a, b int) bool {
		x, y := cands[a], cands[b]
		if x.priority != y.priority {
			return x.priority > y.priority
		}
		if x.runAt != y.runAt {
			return x.runAt < y.runAt
		}
		return x.createdAt < y.createdAt
	})
	cands = cands[:min(len(cands), p.Limit)]
	if len(cands) == 0 {
		return nil, nil
	}
	ids := make([]any, len(cands))
	taken := map[string]int{}
	for i, c := range cands {
		ids[i] = c.rowid
		taken[c.queue]++
	}
	return ids, s.recordStarts(ctx, tx, cs, taken, p.Now)
}

// perQueueMax is how many free queues a steered claim reads one by one;
// beyond it, it walks the global claim order past the steered queues' jobs.
const perQueueMax = 16

// freeCandidates reads up to p.Limit candidates from each queue the claim
// may take from that is not steered: the named ones, or (every queue) those
// that hold runnable jobs, as job_counts and this transaction's tally say.
// Each is read through its own range of jobs_claim_queue, so a limited
// queue's backlog is never walked.
func (s *Store) freeCandidates(ctx context.Context, tx *sql.Tx, p queue.ClaimParams, cs []queue.QueueControl, steered map[string]bool) ([]candidate, error) {
	queues := p.Queues
	if len(queues) == 0 {
		st, err := s.stmt(ctx, tx, `SELECT DISTINCT queue FROM job_counts WHERE state IN ('pending', 'failed') AND n > 0`)
		if err != nil {
			return nil, err
		}
		rows, err := st.QueryContext(ctx)
		if err != nil {
			return nil, err
		}
		if queues, err = scanColumn[string](rows); err != nil {
			return nil, err
		}
		// job_counts gets this transaction's own moves only at commit:
		// a queue where its outcomes released or retried jobs counts too.
		for k, n := range s.tally.jobs {
			if n > 0 && (k.state == string(queue.StatePending) || k.state == string(queue.StateFailed)) && !slices.Contains(queues, k.queue) {
				queues = append(queues, k.queue)
			}
		}
	}
	var free []string
	for _, q := range queues {
		if !steered[q] {
			free = append(free, q)
		}
	}
	if len(free) > perQueueMax {
		// Many queues: one walk of the global order, past the steered ones.
		filter, args := " AND queue NOT IN ("+placeholders(len(cs))+")", []any{toUS(p.Now)}
		for _, c := range cs {
			args = append(args, c.Name)
		}
		if len(p.Queues) > 0 {
			filter, args = " AND queue IN ("+placeholders(len(free))+")", []any{toUS(p.Now)}
			for _, q := range free {
				args = append(args, q)
			}
		}
		return s.candidates(ctx, tx, "jobs_claim", filter, p.Limit, args)
	}
	var out []candidate
	for _, q := range free {
		got, err := s.candidates(ctx, tx, "jobs_claim_queue", " AND queue = ?", p.Limit, []any{toUS(p.Now), q})
		if err != nil {
			return nil, err
		}
		out = append(out, got...)
	}
	return out, nil
}

// candidates reads up to limit runnable jobs in claim order through index;
// args are now, then the filter's values.
func (s *Store) candidates(ctx context.Context, tx *sql.Tx, index, filter string, limit int, args []any) ([]candidate, error) {
	st, err := s.stmt(ctx, tx, `SELECT rowid, queue, priority, run_at, created_at FROM jobs INDEXED BY `+index+`
		WHERE state IN ('pending', 'failed') AND run_at <= ?`+filter+`
		ORDER BY priority DESC, run_at, created_at`+limitTo(limit))
	if err != nil {
		return nil, err
	}
	rows, err := st.QueryContext(ctx, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []candidate
	for rows.Next() {
		var c candidate
		if err := rows.Scan(&c.rowid, &c.queue, &c.priority, &c.runAt, &c.createdAt); err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	return out, rows.Err()
}

// countScheduled counts the pending jobs whose run time is after ?1, queue
// by queue: each count is a range of jobs_pending_run_at, so the work is
// the scheduled jobs alone. Grouping the whole index by queue read every
// pending job, a due backlog of a million jobs included, on every
// `status`, /api/v1/status and dashboard refresh.
const countScheduled = `SELECT c.queue, (SELECT count(*) FROM jobs INDEXED BY jobs_pending_run_at
		WHERE state = 'pending' AND queue = c.queue AND run_at > ?1)
	FROM job_counts c WHERE c.state = 'pending' AND c.n > 0`

// CountScheduled implements queue.Store.
func (s *Store) CountScheduled(ctx context.Context, now time.Time) (map[string]int, error) {
	rows, err := s.readDB.QueryContext(ctx, countScheduled, toUS(now))
	if err != nil {
		return nil, fmt.Errorf("count scheduled: %w", describe(err))
	}
	defer rows.Close()
	out := map[string]int{}
	for rows.Next() {
		var q string
		var n int
		if err := rows.Scan(&q, &n); err != nil {
			return nil, fmt.Errorf("count scheduled: %w", err)
		}
		if n > 0 {
			out[q] = n
		}
	}
	return out, rows.Err()
}
