package postgres

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/queuectl/queuectl/queue"
)

const controlColumns = `name, paused, max_running, rate_limit, rate_period_us`

// steeredGuard keeps a claim's free part off paused and limited queues; it
// reads the controls as they are when the statement runs.
const steeredGuard = ` AND NOT EXISTS (SELECT 1 FROM queue_controls qc WHERE qc.name = jobs.queue
			AND (qc.paused OR qc.max_running > 0 OR qc.rate_limit > 0))`

// limitedEvery is how long a store trusts its list of limited queues: a
// queue that becomes limited is left out of every claim (the guard) until
// the list is read again, so at most this long.
const limitedEvery = 500 * time.Millisecond

// limitedCache is the names of the limited queues as last read, so that
// claims of unlimited queues stay one statement on the SKIP LOCKED path.
type limitedCache struct {
	mu    sync.Mutex
	read  time.Time // monotonic
	names []string
}

func scanControl(row pgx.CollectableRow) (queue.QueueControl, error) {
	var c queue.QueueControl
	var per int64
	err := row.Scan(&c.Name, &c.Paused, &c.MaxRunning, &c.Rate.N, &per)
	c.Rate.Per = time.Duration(per) * time.Microsecond
	return c, err
}

// QueueControls implements queue.Store.
func (s *Store) QueueControls(ctx context.Context) ([]queue.QueueControl, error) {
	rows, err := s.pool.Query(ctx, `SELECT `+controlColumns+` FROM queue_controls ORDER BY name`)
	if err != nil {
		return nil, fmt.Errorf("queue controls: %w", err)
	}
	cs, err := collect(rows, scanControl)
	if err != nil {
		return nil, fmt.Errorf("queue controls: %w", err)
	}
	return cs, nil
}

// UpdateQueueControls implements queue.Store. Rows are locked in name
// order, as claims lock them.
func (s *Store) UpdateQueueControls(ctx context.Context, u queue.ControlUpdate) error {
	if err := u.Check(); err != nil {
		return fmt.Errorf("update queue controls: %w", err)
	}
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if _, err := updateControls(ctx, tx, u); err != nil {
			return err
		}
		// A resume or a raised limit may make work runnable.
		_, err := tx.Exec(ctx, notifySQL, s.channel)
		return err
	})
	if err != nil {
		return fmt.Errorf("update queue controls: %w", err)
	}
	s.controlsChanged()
	return nil
}

// controlsChanged makes this process see a change of the controls at
// once, and wakes its idle claimers.
func (s *Store) controlsChanged() {
	s.limited.mu.Lock()
	s.limited.read = time.Time{}
	s.limited.mu.Unlock()
	s.wake.broadcast()
}

// updateControls applies u to the stored controls in tx, locking the
// rows in name order. It returns the controls stored before (a row that
// is stored is steered: one that is not is deleted).
func updateControls(ctx context.Context, tx pgx.Tx, u queue.ControlUpdate) (before []queue.QueueControl, err error) {
	names := slices.Clone(u.Names)
	slices.Sort(names)
	for _, name := range slices.Compact(names) {
		c, err := lockControl(ctx, tx, name)
		if err != nil {
			return nil, err
		}
		if c.Steered() {
			before = append(before, c)
		}
		c = u.Apply(c)
		if !c.Steered() {
			// Neither paused nor limited: no control row, so that a
			// resume of a queue never paused leaves no trace.
			if _, err := tx.Exec(ctx, `DELETE FROM queue_controls WHERE name = $1`, name); err != nil {
				return nil, err
			}
			continue
		}
		_, err = tx.Exec(ctx, `UPDATE queue_controls SET paused = $2, max_running = $3, rate_limit = $4, rate_period_us = $5
			WHERE name = $1`, c.Name, c.Paused, c.MaxRunning, c.Rate.N, c.Rate.Per.Microseconds())
		if err != nil {
			return nil, err
		}
	}
	return before, nil
}

// lockControl locks a queue's control row, inserting it when there is
// none, in one statement. (An insert that does nothing on a conflict,
// then a SELECT … FOR UPDATE, finds no row when an update that deletes
// it, its queue no longer steered, commits in between; an upsert that
// updates locks the row it finds, or inserts it again.)
func lockControl(ctx context.Context, tx pgx.Tx, name string) (queue.QueueControl, error) {
	rows, err := tx.Query(ctx, `INSERT INTO queue_controls (name) VALUES ($1)
		ON CONFLICT (name) DO UPDATE SET name = excluded.name RETURNING `+controlColumns, name)
	if err != nil {
		return queue.QueueControl{}, err
	}
	return pgx.CollectExactlyOneRow(rows, scanControl)
}

// limitedIn returns the limited queues a claim of queues (every queue when
// empty) may take from, as last read (see limitedEvery).
func (s *Store) limitedIn(ctx context.Context, queues []string) ([]string, error) {
	c := &s.limited
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.read.IsZero() || time.Since(c.read) > limitedEvery {
		rows, err := s.pool.Query(ctx, `SELECT name FROM queue_controls WHERE max_running > 0 OR rate_limit > 0`)
		if err != nil {
			return nil, err
		}
		names, err := collect(rows, pgx.RowTo[string])
		if err != nil {
			return nil, err
		}
		c.names, c.read = names, time.Now()
	}
	var out []string
	for _, n := range c.names {
		if len(queues) == 0 || slices.Contains(queues, n) {
			out = append(out, n)
		}
	}
	return out, nil
}

// claimLimited claims when some queue the claim may take from is limited.
// In one transaction it locks the limited queues' control rows (in name
// order; claimers of those queues take turns, claimers of other queues do
// not wait), counts their running jobs and recent starts, and takes up to
// p.Limit jobs in claim order from the free queues (SKIP LOCKED, as ever)
// and up to its allowance from each limited queue. The starts of
// rate-limited queues are recorded before the locks are released.
func (s *Store) claimLimited(ctx context.Context, p queue.ClaimParams, limited []string) ([]*queue.Job, error) {
	var jobs []*queue.Job
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, `SELECT `+controlColumns+` FROM queue_controls WHERE name = ANY($1)
			ORDER BY name FOR UPDATE`, limited)
		if err != nil {
			return err
		}
		cs, err := collect(rows, scanControl)
		if err != nil {
			return err
		}
		allow := map[string]int{}
		for _, c := range cs {
			if !c.Limited() || c.Paused {
				continue
			}
			// The running jobs are counted from job_totals, which every
			// statement that moves a job keeps in its own transaction: as
			// exact as counting the rows, one row per shard to read instead
			// of one per running job (no index of jobs leads with the queue
			// for processing jobs).
			var running, starts int
			err := tx.QueryRow(ctx, `SELECT coalesce(sum(n), 0)::bigint FROM job_totals WHERE queue = $1 AND state = 'processing'`,
				c.Name).Scan(&running)
			if err == nil && c.Rate.N > 0 {
				err = tx.QueryRow(ctx, `SELECT count(*) FROM queue_starts WHERE queue = $1 AND at > now() - $2 * interval '1 microsecond'`,
					c.Name, c.Rate.Per.Microseconds()).Scan(&starts)
			}
			if err != nil {
				return err
			}
			if a := c.Allowance(running, starts); a != 0 {
				allow[c.Name] = a
			}
		}
		free, err := freeQueues(ctx, tx, p.Queues, limited)
		if err != nil {
			return err
		}
		// Planned as every claim (claimSettings); the statements after it
		// sort nothing.
		if _, err := tx.Exec(ctx, `SELECT `+claimPlanning); err != nil {
			return err
		}
		query, args := limitedClaimSQL(p, limited, free, allow)
		rows, err = tx.Query(ctx, query, args...)
		if err != nil {
			return err
		}
		if jobs, err = scanClaimed(rows); err != nil {
			return err
		}
		return recordStarts(ctx, tx, cs, jobs)
	})
	return jobs, err
}

// limitedClaimSQL builds the statement of claimLimited: one CTE per part
// (the free queues, then each limited queue with an allowance), each
// walking a claim index with SKIP LOCKED, and the first p.Limit of their
// union in claim order are taken.
func limitedClaimSQL(p queue.ClaimParams, limited, free []string, allow map[string]int) (string, []any) {
	args := []any{p.Now, p.Worker, p.LeaseUntil}
	part := func(filter, order string, n int) string {
		return `(SELECT id, priority, run_at, created_at, seq, state FROM jobs
			WHERE state IN ('pending', 'failed') AND run_at <= $1` + filter + `
			ORDER BY ` + order + ` LIMIT ` + strconv.Itoa(n) + ` FOR UPDATE SKIP LOCKED)`
	}
	var ctes, names []string
	switch {
	case len(free) > 0 && len(free) <= perQueueMax:
		// One index range per free queue: never past a limited backlog.
		for _, q := range free {
			args = append(args, q)
			ctes = append(ctes, part(oneQueueFilter("$"+strconv.Itoa(len(args))), oneQueueOrder, p.Limit))
		}
	case len(free) > 0 && len(p.Queues) > 0:
		args = append(args, free)
		ctes = append(ctes, part(` AND queue = ANY($4)`+steeredGuard, claimOrder, p.Limit))
	case len(free) > 0:
		ctes = append(ctes, part(steeredGuard, claimOrder, p.Limit))
	}
	for _, q := range limited {
		n := allow[q]
		if n == 0 {
			continue
		}
		if n < 0 || n > p.Limit {
			n = p.Limit
		}
		args = append(args, q)
		ctes = append(ctes, part(` AND queue >= $`+strconv.Itoa(len(args))+` AND queue <= $`+strconv.Itoa(len(args)), oneQueueOrder, n))
	}
	if len(ctes) == 0 {
		return `SELECT ` + jobColumns("") + ` FROM jobs WHERE false`, args[:0]
	}
	for i := range ctes {
		names = append(names, `SELECT * FROM c`+strconv.Itoa(i))
		ctes[i] = `c` + strconv.Itoa(i) + ` AS ` + ctes[i]
	}
	return `WITH ` + strings.Join(ctes, ",\n") + `,
	pick AS (` + strings.Join(names, " UNION ALL ") + ` ORDER BY ` + claimOrder + ` LIMIT ` + strconv.Itoa(p.Limit) + `)` +
		claimUpdate("pick"), args
}

// perQueueMax is how many free queues a limited claim reads one by one;
// beyond it, it walks the global claim order past the steered queues' jobs.
const perQueueMax = 16

// runnableQueuesCTE names q(queue): the queues that hold pending or failed
// jobs (and a last NULL row), by a skip scan of an index of the runnable
// jobs led by queue, one index probe per queue.
const runnableQueuesCTE = `WITH RECURSIVE q(queue) AS (
		(SELECT queue FROM jobs WHERE state IN ('pending', 'failed') ORDER BY queue LIMIT 1)
		UNION ALL
		SELECT (SELECT j.queue FROM jobs j WHERE j.state IN ('pending', 'failed') AND j.queue > q.queue
			ORDER BY j.queue LIMIT 1)
		FROM q WHERE q.queue IS NOT NULL)`

// runnableQueues lists the queues that hold pending or failed jobs.
const runnableQueues = runnableQueuesCTE + `
	SELECT queue FROM q WHERE queue IS NOT NULL`

// freeQueues returns the queues a limited claim may take from that are
// not limited: the named ones, or those holding runnable jobs.
func freeQueues(ctx context.Context, tx pgx.Tx, queues, limited []string) ([]string, error) {
	if len(queues) == 0 {
		rows, err := tx.Query(ctx, runnableQueues)
		if err != nil {
			return nil, err
		}
		if queues, err = collect(rows, pgx.RowTo[string]); err != nil {
			return nil, err
		}
	}
	var free []string
	for _, q := range queues {
		if !slices.Contains(limited, q) {
			free = append(free, q)
		}
	}
	return free, nil
}

// recordStarts notes the starts of rate-limited queues a claim made and
// forgets those older than their period. Starts are stamped and counted
// on the database's clock (the transaction's now()), as leases are
// (queue.DatabaseClock): claimers on hosts whose clocks disagree share one
// window, where a host ahead would miss the others' starts and a host
// behind keep counting them long after their period.
func recordStarts(ctx context.Context, tx pgx.Tx, cs []queue.QueueControl, jobs []*queue.Job) error {
	for _, c := range cs {
		if c.Rate.N <= 0 || c.Paused {
			continue
		}
		n := 0
		for _, j := range jobs {
			if j.Queue == c.Name {
				n++
			}
		}
		if _, err := tx.Exec(ctx, `DELETE FROM queue_starts WHERE queue = $1 AND at <= now() - $2 * interval '1 microsecond'`,
			c.Name, c.Rate.Per.Microseconds()); err != nil {
			return err
		}
		if n > 0 {
			if _, err := tx.Exec(ctx, `INSERT INTO queue_starts (queue, at) SELECT $1, now() FROM generate_series(1, $2)`,
				c.Name, n); err != nil {
				return err
			}
		}
	}
	return nil
}

// CountScheduled implements queue.Store.
func (s *Store) CountScheduled(ctx context.Context, now time.Time) (map[string]int, error) {
	rows, err := s.pool.Query(ctx, `SELECT queue, count(*) FROM jobs WHERE state = 'pending' AND run_at > $1 GROUP BY queue`, now)
	if err != nil {
		return nil, fmt.Errorf("count scheduled: %w", err)
	}
	out := map[string]int{}
	var q string
	var n int
	if _, err := pgx.ForEachRow(rows, []any{&q, &n}, func() error { out[q] = n; return nil }); err != nil {
		return nil, fmt.Errorf("count scheduled: %w", err)
	}
	return out, nil
}
