package postgres

import (
	"context"
	"errors"
	"fmt"
	"slices"
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
		if err := checkRetryKeys(ctx, tx, ids); err != nil {
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

// checkRetryKeys refuses a retry of the dead jobs among ids that would
// give a unique key a second unfinished job (jobs_unique_key would refuse
// it with a bare constraint error), naming the job, the key and the other.
func checkRetryKeys(ctx context.Context, tx pgx.Tx, ids []string) error {
	var id, key, other string
	var both bool
	err := tx.QueryRow(ctx, `SELECT r.id, r.unique_key, h.id, h.id = ANY($1)
		FROM jobs r JOIN jobs h ON h.unique_key = r.unique_key AND h.id <> r.id
		WHERE r.id = ANY($1) AND r.state = 'dead'
			AND (h.state NOT IN ('completed', 'dead', 'cancelled') OR (h.state = 'dead' AND h.id = ANY($1)))
		ORDER BY r.id, h.id LIMIT 1`, ids).Scan(&id, &key, &other, &both)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil
	}
	if err != nil {
		return err
	}
	return storekit.KeyTaken(id, key, other, both)
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
	if allDead && !unstorable(q) { // no job is in a queue of an unstorable name
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
	// An unstorable id names no job: PickJobs reports it as not found.
	lookup := slices.DeleteFunc(slices.Clone(ids), unstorable)
	rows, err := tx.Query(ctx, `SELECT id, state FROM jobs WHERE id = ANY($1) ORDER BY id FOR UPDATE`, lookup)
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
	if unstorable(id) {
		return "", false, nil
	}
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

// RegisterWorker implements queue.Store (an upsert).
func (s *Store) RegisterWorker(ctx context.Context, w *queue.WorkerInfo) error {
	// The heartbeat is stamped on the database's clock (queue.DatabaseClock).
	_, err := s.pool.Exec(ctx, `INSERT INTO workers (id, pid, host, boot_id, proc_start, queues, service, started_at, heartbeat_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, now())
		ON CONFLICT (id) DO UPDATE SET heartbeat_at = excluded.heartbeat_at`,
		w.ID, w.PID, w.Host, w.BootID, int64(w.ProcStart), w.Queues, w.Service, w.StartedAt)
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
	rows, err := s.pool.Query(ctx, `SELECT w.id, w.pid, w.host, w.boot_id, w.proc_start, w.queues, w.service, w.started_at,
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
		err := r.Scan(&w.ID, &w.PID, &w.Host, &w.BootID, &start, &w.Queues, &w.Service, &started, &hb, &w.StopRequested, &w.CurrentJobs)
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
