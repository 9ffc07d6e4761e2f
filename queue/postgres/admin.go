package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/queuectl/queuectl/queue"
	"github.com/queuectl/queuectl/queue/internal/storekit"
)

// RetryJobs implements queue.Store. It changes all named jobs or none: the
// rows are locked (in id order, so concurrent retries cannot deadlock),
// checked in the order given, then moved together.
func (s *Store) RetryJobs(ctx context.Context, p queue.RetryParams) ([]string, error) {
	var moved []string
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		moved = nil
		ids, err := lockJobs(ctx, tx, p.IDs, p.AllDead, p.Queue, queue.State.Retryable, "only failed or dead jobs can be retried")
		if err != nil || len(ids) == 0 {
			return err
		}
		moved = ids
		// The rows are locked: read what the lifecycle needs, write what it decides.
		rows, err := tx.Query(ctx, `SELECT id, state, attempts FROM jobs WHERE id = ANY($1)`, ids)
		if err != nil {
			return err
		}
		var id, state string
		var n int
		var rids, states []string
		var attempts []int
		if _, err = pgx.ForEachRow(rows, []any{&id, &state, &n}, func() error {
			rids, attempts = append(rids, id), append(attempts, queue.RetryAttempts(queue.State(state), n))
			states = append(states, state)
			return nil
		}); err != nil {
			return err
		}
		// The final attempt kept on a dead job's row goes to attempts, where
		// the job's next attempts go too.
		if _, err = tx.Exec(ctx, moveFinalAttempts, rids); err != nil {
			return err
		}
		// A reset attempt count resets the uncharged ones too.
		_, err = tx.Exec(ctx, countedUpdate(`UPDATE jobs SET state = 'pending', run_at = $1, updated_at = $1, attempts = v.attempts,
			uncharged = least(jobs.uncharged, v.attempts), last_started_at = NULL, last_outcome = NULL, last_signal = NULL,
			last_output = NULL, last_dropped = NULL
			FROM unnest($2::text[], $3::integer[], $4::text[]) AS v(id, attempts, was) WHERE jobs.id = v.id
			RETURNING jobs.queue, v.was, jobs.state AS became`), p.Now, rids, attempts, states)
		if err != nil {
			return err
		}
		_, err = tx.Exec(ctx, notifySQL, s.channel)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("retry jobs: %w", err)
	}
	if len(moved) > 0 {
		s.wake.broadcast()
	}
	return moved, nil
}

// moveFinalAttempts copies the final attempts kept on the rows of the jobs
// $1 (finishAll) to attempts, in the columns job_attempts reads them from.
const moveFinalAttempts = `INSERT INTO attempts (job_id, number, started_at, finished_at, exit_code, signal, outcome, worker, error,
		output, dropped)
	SELECT id, attempts, last_started_at, finished_at, exit_code, last_signal, last_outcome::text, worker, error,
		last_output, coalesce(last_dropped, 0)
	FROM jobs WHERE id = ANY($1) AND last_outcome IS NOT NULL ORDER BY id`

// lockJobs locks the named jobs and, with allDead, every dead job (of
// queue q when given), in id order so that concurrent callers cannot
// deadlock. It checks that each exists and that allow accepts its state
// (rule says which it accepts), and returns the ids once each, named ones
// first in the order given.
func lockJobs(ctx context.Context, tx pgx.Tx, named []string, allDead bool, q string,
	allow func(queue.State) bool, rule string) ([]string, error) {
	ids := append([]string(nil), named...)
	if allDead {
		rows, err := tx.Query(ctx, `SELECT id FROM jobs WHERE state = 'dead' AND ($1 = '' OR queue = $1)
			ORDER BY created_at, seq`, q)
		if err != nil {
			return nil, err
		}
		dead, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			return nil, err
		}
		ids = append(ids, dead...)
	}
	if len(ids) == 0 {
		return nil, nil
	}
	rows, err := tx.Query(ctx, `SELECT id, state FROM jobs WHERE id = ANY($1) ORDER BY id FOR UPDATE`, ids)
	if err != nil {
		return nil, err
	}
	states := map[string]queue.State{}
	var id, state string
	if _, err = pgx.ForEachRow(rows, []any{&id, &state}, func() error {
		states[id] = queue.State(state)
		return nil
	}); err != nil {
		return nil, err
	}
	return storekit.PickJobs(ids, func(id string) (queue.State, bool, error) {
		s, ok := states[id]
		return s, ok, nil
	}, allow, rule)
}

// DiscardJobs implements queue.Store. It deletes all named jobs or none.
func (s *Store) DiscardJobs(ctx context.Context, p queue.DiscardParams) ([]string, error) {
	var gone []string
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		gone = nil
		ids, err := lockJobs(ctx, tx, p.IDs, p.AllDead, p.Queue, queue.State.Discardable, "a running job cannot be discarded: cancel it first")
		if err != nil || len(ids) == 0 {
			return err
		}
		gone = ids
		if err := forgetAttempts(ctx, tx, ids); err != nil {
			return err
		}
		rows, err := tx.Query(ctx, `DELETE FROM jobs WHERE id = ANY($1) RETURNING id, state`, gone)
		if err != nil {
			return err
		}
		var unfinished []string
		var id, state string
		if _, err := pgx.ForEachRow(rows, []any{&id, &state}, func() error {
			if queue.State(state).DiscardReachesDependents() {
				unfinished = append(unfinished, id)
			}
			return nil
		}); err != nil {
			return err
		}
		_, err = storekit.Settle(ctx, settleTx{tx}, unfinished, time.Now().UTC())
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("discard jobs: %w", err)
	}
	return gone, nil
}

// CancelJob implements queue.Store.
func (s *Store) CancelJob(ctx context.Context, id string, now time.Time) (queue.State, error) {
	var was queue.State
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		var err error
		if was, err = storekit.Cancel(ctx, cancelTx{settleTx{tx}, tx, s.channel}, id, now); err != nil {
			return err
		}
		_, err = tx.Exec(ctx, notifySQL, s.eventsChannel)
		return err
	})
	if err != nil {
		return "", fmt.Errorf("cancel job: %w", err)
	}
	if was == queue.StateProcessing { // wake its worker's heartbeat
		s.wake.broadcast()
	}
	return was, nil
}

// cancelTx runs storekit.Cancel's steps in one transaction; JobState locks
// the job's row so that a concurrent finish waits for the decision.
type cancelTx struct {
	settleTx
	tx      pgx.Tx
	channel string
}

func (c cancelTx) JobState(ctx context.Context, id string) (queue.State, bool, error) {
	var state string
	err := c.tx.QueryRow(ctx, `SELECT state FROM jobs WHERE id = $1 FOR UPDATE`, id).Scan(&state)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", false, nil
	}
	return queue.State(state), err == nil, err
}

func (c cancelTx) CancelNow(ctx context.Context, id, reason string, now time.Time) error {
	// The row is locked (JobState): the subquery reads the state it had.
	_, err := c.tx.Exec(ctx, countedUpdate(`UPDATE jobs SET state = $1, error = $2, updated_at = $3
		FROM (SELECT state AS was FROM jobs WHERE id = $4) o WHERE id = $4
		RETURNING queue, o.was, jobs.state AS became`), string(queue.StateCancelled), reason, now, id)
	return err
}

func (c cancelTx) RequestCancel(ctx context.Context, id string, now time.Time) error {
	if _, err := c.tx.Exec(ctx, `UPDATE jobs SET cancel_requested = true, updated_at = $1 WHERE id = $2`, now, id); err != nil {
		return err
	}
	_, err := c.tx.Exec(ctx, notifySQL, c.channel)
	return err
}

// deleteMatch selects the jobs DeleteJobs deletes: $1 before, $2 states.
// The states are finished ones (DeletableStates); saying so in the text as
// well lets the planner use jobs_finished_updated, whose predicate it is,
// in a generic plan too.
const (
	deleteCond  = `state IN ('completed', 'dead', 'cancelled') AND state = ANY($2) AND updated_at < $1`
	deleteMatch = `SELECT id FROM jobs WHERE ` + deleteCond
)

// lockInIDOrder is a statement that locks the jobs of the ids in
// parameter ids that still meet cond, in id order: the order lockJobs
// takes for retries and discards. Statements that lock several jobs' rows
// in the order they happen to find them (retention by age, pruning by end
// time) can each hold a row another waits for, and PostgreSQL then aborts
// one of them; so those find their jobs' ids first, unlocked, and lock
// them with this. A row another transaction changed meanwhile is locked
// only if it still meets cond. (Locking through "id IN (the finding
// query)" instead lets the planner join every job that meets cond to a
// batch of a few hundred.)
func lockInIDOrder(ids, cond string) string {
	return `SELECT id FROM jobs WHERE id = ANY(` + ids + `) AND ` + cond + ` ORDER BY id FOR UPDATE`
}

// idsOf runs match, a query of job ids, with at most limit rows (0: all).
func idsOf(ctx context.Context, q conn, match string, limit int, args ...any) ([]string, error) {
	if limit > 0 {
		match += fmt.Sprintf(" LIMIT %d", limit)
	}
	rows, err := q.Query(ctx, match, args...)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, pgx.RowTo[string])
}

// DeleteJobs implements queue.Store. History goes with its job (ON DELETE
// CASCADE), and out of the run-time histograms: the jobs are locked first,
// so that no attempt is added to them between the two.
func (s *Store) DeleteJobs(ctx context.Context, p queue.DeleteParams) (int, error) {
	states, err := queue.DeletableStates(p.States)
	if err != nil {
		return 0, fmt.Errorf("delete jobs: %w", err)
	}
	var n int
	if p.DryRun {
		n, err = s.batch(ctx, deleteMatch, "", p.Limit, true, p.Before, stateStrings(states))
	} else {
		n, err = s.deleteJobs(ctx, p.Limit, p.Before, stateStrings(states))
	}
	if err != nil {
		return 0, fmt.Errorf("delete jobs: %w", err)
	}
	return n, nil
}

// deleteJobs deletes at most limit (0: all) of the jobs deleteMatch
// selects, in one transaction, and takes their attempts out of the
// run-time histograms.
func (s *Store) deleteJobs(ctx context.Context, limit int, args ...any) (int, error) {
	var n int
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		ids, err := idsOf(ctx, tx, deleteMatch, limit, args...)
		if err != nil || len(ids) == 0 {
			return err
		}
		rows, err := tx.Query(ctx, lockInIDOrder("$3", deleteCond), append(args, ids)...)
		if err != nil {
			return err
		}
		if ids, err = pgx.CollectRows(rows, pgx.RowTo[string]); err != nil || len(ids) == 0 {
			return err
		}
		if err := forgetAttempts(ctx, tx, ids); err != nil {
			return err
		}
		tag, err := tx.Exec(ctx, `DELETE FROM jobs WHERE id = ANY($1)`, ids)
		n = int(tag.RowsAffected())
		return err
	})
	return n, err
}

// forgetRuns takes the attempts of the jobs $1 out of run_slots, computing
// their slots and buckets as countFinished (finish.go) does. It locks
// the rows in key order, as countFinished does, so that the two cannot
// deadlock: hence an upsert, which never inserts (the rows exist) or, if
// it did, would insert a row that forgetAttempts deletes at once.
var forgetRuns = `INSERT INTO run_slots AS r (span, slot, queue, class, le_us, n, min_us, max_us)
	SELECT s.span, date_trunc(s.span, a.finished_at AT TIME ZONE 'UTC') AT TIME ZONE 'UTC', j.queue,
		CASE WHEN a.outcome IN ('succeeded', 'interrupted') THEN a.outcome ELSE 'failed' END,
		(SELECT min(le_us) FROM run_buckets WHERE le_us >= ` + runMicros("a.started_at", "a.finished_at") + `),
		-count(*), 0, 0
	FROM job_attempts a JOIN jobs j ON j.id = a.job_id CROSS JOIN (VALUES ('minute'), ('hour')) s(span)
	WHERE a.job_id = ANY($1)
	GROUP BY 1, 2, 3, 4, 5 ORDER BY 1, 2, 3, 4, 5
	ON CONFLICT (span, slot, queue, class, le_us) DO UPDATE SET n = r.n + excluded.n
	RETURNING span, slot, n`

// forgetAttempts takes the attempts of jobs about to be deleted out of the
// run-time histograms, and deletes the histogram rows that count nothing
// any more.
func forgetAttempts(ctx context.Context, tx pgx.Tx, ids []string) error {
	rows, err := tx.Query(ctx, forgetRuns, ids)
	if err != nil {
		return err
	}
	var spans []string
	var slots []time.Time
	var span string
	var slot time.Time
	var n int64
	_, err = pgx.ForEachRow(rows, []any{&span, &slot, &n}, func() error {
		if n <= 0 {
			spans, slots = append(spans, span), append(slots, slot)
		}
		return nil
	})
	if err != nil || len(spans) == 0 {
		return err
	}
	_, err = tx.Exec(ctx, `DELETE FROM run_slots WHERE n <= 0 AND (span, slot) IN (SELECT * FROM unnest($1::text[], $2::timestamptz[]))`,
		spans, slots)
	return err
}

// pruneMatch finds the attempts whose output pruning empties, through
// attempts_output_finished (migration 16): those that ended before $1 and
// still hold output.
const pruneMatch = `SELECT job_id, seq FROM attempts WHERE finished_at < $1 AND output IS NOT NULL`

// pruneChange empties the attempts pruneMatch finds, each found by its
// key (job_id, seq: migration 18). A join, not "(job_id, seq) IN": the
// planner expects a few rows from a row-valued IN and reads every attempt
// to match them. The rows are locked in key order first, the order in
// which deleting their jobs (retention, discards: jobs in id order, each
// job's attempts by the foreign key's cascade) takes them, so that the two
// cannot deadlock. The row is checked again as the update finds it, since
// a concurrent prune (each service runs its own) may have emptied it first.
const pruneChange = `UPDATE attempts a SET dropped = a.dropped + length(a.output), output = NULL
	FROM (SELECT l.job_id, l.seq FROM attempts l JOIN (%s) f ON l.job_id = f.job_id AND l.seq = f.seq
		ORDER BY l.job_id, l.seq FOR UPDATE OF l) m
	WHERE a.job_id = m.job_id AND a.seq = m.seq AND a.output IS NOT NULL`

// pruneFinalMatch and pruneFinalChange do the same for the final attempts
// kept on finished jobs' rows, through jobs_output_finished (migration 21).
// The update takes the ids pruneFinalMatch found ($2) and locks their rows
// in id order first (lockInIDOrder: a retry of a dead job or retention may
// hold some of them), checking each again as it is locked: a concurrent
// prune may have emptied one, or a retry and a new run may have given it
// a newer attempt.
const (
	pruneFinalCond  = `finished_at < $1 AND last_output IS NOT NULL`
	pruneFinalMatch = `SELECT id FROM jobs WHERE ` + pruneFinalCond
)

var pruneFinalChange = `UPDATE jobs j SET last_dropped = coalesce(j.last_dropped, 0) + length(j.last_output), last_output = NULL
	FROM (` + lockInIDOrder("$2", pruneFinalCond) + `) m WHERE j.id = m.id AND j.last_output IS NOT NULL AND j.finished_at < $1`

// PruneOutput implements queue.Store: the attempts first, then the final
// attempts on the jobs' rows, at most p.Limit (0: all) in all. When the
// second statement fails, the count is what the first one emptied.
func (s *Store) PruneOutput(ctx context.Context, p queue.PruneOutputParams) (int, error) {
	n, err := s.batch(ctx, pruneMatch, pruneChange, p.Limit, p.DryRun, p.Before)
	if err != nil {
		return 0, fmt.Errorf("prune output: %w", err)
	}
	if p.Limit > 0 && n >= p.Limit {
		return n, nil
	}
	m, err := s.pruneFinal(ctx, max(p.Limit-n, 0), p.DryRun, p.Before)
	if err != nil {
		return n, fmt.Errorf("prune output: %w", err)
	}
	return n + m, nil
}

// pruneFinal empties the output of at most limit (0: all) final attempts
// kept on job rows that ended before before, or only counts them.
func (s *Store) pruneFinal(ctx context.Context, limit int, dryRun bool, before time.Time) (int, error) {
	if dryRun {
		return s.batch(ctx, pruneFinalMatch, "", limit, true, before)
	}
	ids, err := idsOf(ctx, s.pool, pruneFinalMatch, limit, before)
	if err != nil || len(ids) == 0 {
		return 0, err
	}
	tag, err := s.pool.Exec(ctx, pruneFinalChange, before, ids)
	return int(tag.RowsAffected()), err
}

// batch runs change (a statement with %s for the rows) on at most limit
// rows that match selects (0: all), or only counts them.
func (s *Store) batch(ctx context.Context, match, change string, limit int, dryRun bool, args ...any) (int, error) {
	if limit > 0 {
		match += fmt.Sprintf(" LIMIT %d", limit)
	}
	if dryRun {
		var n int
		err := s.pool.QueryRow(ctx, `SELECT count(*) FROM (`+match+`) m`, args...).Scan(&n)
		return n, err
	}
	tag, err := s.pool.Exec(ctx, fmt.Sprintf(change, match), args...)
	if err != nil {
		return 0, err
	}
	return int(tag.RowsAffected()), nil
}

// RegisterWorker implements queue.Store (an upsert).
func (s *Store) RegisterWorker(ctx context.Context, w *queue.WorkerInfo) error {
	// The heartbeat is stamped on the database's clock (queue.DatabaseClock).
	_, err := s.pool.Exec(ctx, `INSERT INTO workers (id, pid, host, boot_id, proc_start, queues, started_at, heartbeat_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, now())
		ON CONFLICT (id) DO UPDATE SET heartbeat_at = excluded.heartbeat_at`,
		w.ID, w.PID, w.Host, w.BootID, int64(w.ProcStart), w.Queues, w.StartedAt)
	if err != nil {
		return fmt.Errorf("register worker: %w", err)
	}
	return nil
}

// UnregisterWorker implements queue.Store.
func (s *Store) UnregisterWorker(ctx context.Context, id string) error {
	if _, err := s.pool.Exec(ctx, `DELETE FROM workers WHERE id = $1`, id); err != nil {
		return fmt.Errorf("unregister worker: %w", err)
	}
	return nil
}

// ListWorkers implements queue.Store.
func (s *Store) ListWorkers(ctx context.Context) ([]*queue.WorkerInfo, error) {
	rows, err := s.pool.Query(ctx, `SELECT w.id, w.pid, w.host, w.boot_id, w.proc_start, w.queues, w.started_at,
		w.heartbeat_at, w.stop_requested,
		(SELECT array_agg(j.id ORDER BY j.seq) FROM jobs j WHERE j.worker = w.id AND j.state = 'processing')
		FROM workers w ORDER BY w.started_at, w.id`)
	if err != nil {
		return nil, fmt.Errorf("list workers: %w", err)
	}
	out, err := collect(rows, func(r pgx.CollectableRow) (*queue.WorkerInfo, error) {
		var w queue.WorkerInfo
		var start int64
		var started, hb time.Time
		err := r.Scan(&w.ID, &w.PID, &w.Host, &w.BootID, &start, &w.Queues, &started, &hb, &w.StopRequested, &w.CurrentJobs)
		w.ProcStart = uint64(start)
		w.StartedAt, w.HeartbeatAt = started.UTC(), hb.UTC()
		return &w, err
	})
	if err != nil {
		return nil, fmt.Errorf("list workers: %w", err)
	}
	return out, nil
}

// RequestStop implements queue.Store.
func (s *Store) RequestStop(ctx context.Context, ids []string) error {
	query, args := `UPDATE workers SET stop_requested = true`, []any{s.channel}
	if len(ids) > 0 {
		query += ` WHERE id = ANY($2)`
		args = append(args, ids)
	}
	// One statement: the update and the wake-up commit together.
	_, err := s.pool.Exec(ctx, `WITH u AS (`+query+` RETURNING 1) SELECT pg_notify($1, '')`, args...)
	if err != nil {
		return fmt.Errorf("request stop: %w", err)
	}
	s.wake.broadcast()
	return nil
}

// GetConfig implements queue.Store.
func (s *Store) GetConfig(ctx context.Context) (map[string]string, error) {
	rows, err := s.pool.Query(ctx, `SELECT key, value FROM config`, pgx.QueryExecModeSimpleProtocol) // as Queues
	if err != nil {
		return nil, fmt.Errorf("get config: %w", err)
	}
	defer rows.Close()
	out := map[string]string{}
	for rows.Next() {
		var k, v string
		if err := rows.Scan(&k, &v); err != nil {
			return nil, fmt.Errorf("get config: %w", err)
		}
		out[k] = v
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("get config: %w", err)
	}
	return out, nil
}

// SetConfig implements queue.Store.
func (s *Store) SetConfig(ctx context.Context, key, value string) error {
	_, err := s.pool.Exec(ctx, `INSERT INTO config (key, value) VALUES ($1, $2)
		ON CONFLICT (key) DO UPDATE SET value = excluded.value`, key, value)
	if err != nil {
		return fmt.Errorf("set config: %w", err)
	}
	return nil
}
