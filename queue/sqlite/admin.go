package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/queuectl/queuectl/queue"
	"github.com/queuectl/queuectl/queue/internal/storekit"
)

// RetryJobs implements queue.Store. It changes all named jobs or none.
func (s *Store) RetryJobs(ctx context.Context, p queue.RetryParams) ([]string, error) {
	var moved []string
	err := s.write(ctx, true, func(ctx context.Context, tx *sql.Tx) error {
		moved = nil
		ids, err := pickJobs(ctx, tx, p.IDs, p.AllDead, p.Queue, queue.State.Retryable, "only failed or dead jobs can be retried")
		if err != nil {
			return err
		}
		if err := checkRetryKeys(ctx, tx, ids); err != nil {
			return err
		}
		for _, id := range ids {
			var q, state string
			var attempts int
			if err := tx.QueryRowContext(ctx, `SELECT queue, state, attempts FROM jobs WHERE id = ?`, id).Scan(&q, &state, &attempts); err != nil {
				return err
			}
			// The final attempt kept on a dead job's row goes to attempts,
			// where the job's next attempts go too.
			if _, err := tx.ExecContext(ctx, moveFinalAttempt, id); err != nil {
				return err
			}
			// A reset attempt count resets the uncharged ones too.
			_, err := tx.ExecContext(ctx, `UPDATE jobs SET state = 'pending', run_at = ?1, updated_at = ?1, attempts = ?2,
				uncharged = min(uncharged, ?2), last_started_at = NULL, last_outcome = NULL, last_signal = NULL,
				last_output = NULL, last_dropped = NULL WHERE id = ?3`,
				toUS(p.Now), queue.RetryAttempts(queue.State(state), attempts), id)
			if err != nil {
				return err
			}
			s.tally.move(q, queue.State(state), queue.StatePending)
			moved = append(moved, id)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("retry jobs: %w", err)
	}
	if len(moved) > 0 {
		s.wake.notify()
	}
	return moved, nil
}

// checkRetryKeys refuses a retry of the dead jobs among ids that would
// give a unique key a second unfinished job (jobs_unique_key would refuse
// it with a bare constraint error), naming the job, the key and the other.
func checkRetryKeys(ctx context.Context, tx *sql.Tx, ids []string) error {
	if len(ids) == 0 {
		return nil
	}
	list, err := json.Marshal(ids)
	if err != nil {
		return err
	}
	var id, key, other string
	var both bool
	err = tx.QueryRowContext(ctx, `SELECT r.id, r.unique_key, h.id, h.id IN (SELECT value FROM json_each(?1))
		FROM jobs r JOIN jobs h ON h.unique_key = r.unique_key AND h.id <> r.id
		WHERE r.id IN (SELECT value FROM json_each(?1)) AND r.state = 'dead'
			AND (`+holdsKey("h.")+` OR (h.state = 'dead' AND h.id IN (SELECT value FROM json_each(?1))))
		ORDER BY r.id, h.id LIMIT 1`, string(list)).Scan(&id, &key, &other, &both)
	if errors.Is(err, sql.ErrNoRows) {
		return nil
	}
	if err != nil {
		return err
	}
	return storekit.KeyTaken(id, key, other, both)
}

// moveFinalAttempt copies the final attempt kept on job ?1's row (finish.go)
// to attempts, in the columns job_attempts reads it from.
const moveFinalAttempt = `INSERT INTO attempts (job_id, number, started_at, finished_at, exit_code, signal, outcome, worker, error,
		output, dropped)
	SELECT id, attempts, last_started_at, finished_at, exit_code, last_signal, last_outcome, worker, error,
		last_output, coalesce(last_dropped, 0)
	FROM jobs WHERE id = ? AND last_outcome IS NOT NULL`

// pickJobs returns the named jobs and, with allDead, every dead job (of
// queue q when given), once each, after checking that each exists and that
// allow accepts its state (rule says which states it accepts).
func pickJobs(ctx context.Context, tx *sql.Tx, named []string, allDead bool, q string,
	allow func(queue.State) bool, rule string) ([]string, error) {
	ids := append([]string(nil), named...)
	if allDead {
		rows, err := tx.QueryContext(ctx, `SELECT id FROM jobs WHERE state = 'dead' AND (?1 = '' OR queue = ?1) ORDER BY created_at`, q)
		if err != nil {
			return nil, err
		}
		dead, err := scanColumn[string](rows)
		if err != nil {
			return nil, err
		}
		ids = append(ids, dead...)
	}
	return storekit.PickJobs(ids, func(id string) (queue.State, bool, error) {
		return cancelTx{settleTx{tx: tx}}.JobState(ctx, id)
	}, allow, rule)
}

// DiscardJobs implements queue.Store. It deletes all named jobs or none.
func (s *Store) DiscardJobs(ctx context.Context, p queue.DiscardParams) ([]string, error) {
	var gone []string
	err := s.write(ctx, true, func(ctx context.Context, tx *sql.Tx) error {
		ids, err := pickJobs(ctx, tx, p.IDs, p.AllDead, p.Queue, queue.State.Discardable, "a running job cannot be discarded: cancel it first")
		if err != nil {
			return err
		}
		list, _ := json.Marshal(ids)
		if err := forgetAttempts(ctx, tx, string(list)); err != nil {
			return err
		}
		var unfinished []string
		for _, id := range ids {
			var q, state string
			if err := tx.QueryRowContext(ctx, `DELETE FROM jobs WHERE id = ? RETURNING queue, state`, id).Scan(&q, &state); err != nil {
				return err
			}
			s.tally.move(q, queue.State(state), "")
			if queue.State(state).DiscardReachesDependents() {
				unfinished = append(unfinished, id)
			}
		}
		gone = ids
		_, err = storekit.Settle(ctx, settleTx{tx, &s.tally}, unfinished, time.Now().UTC())
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
	err := s.write(ctx, true, func(ctx context.Context, tx *sql.Tx) error {
		var err error
		was, err = storekit.Cancel(ctx, cancelTx{settleTx{tx, &s.tally}}, id, now)
		return err
	})
	if err != nil {
		return "", fmt.Errorf("cancel job: %w", err)
	}
	if was == queue.StateProcessing { // wake its worker's heartbeat
		s.wake.notify()
	}
	s.events.notify()
	return was, nil
}

// cancelTx runs storekit.Cancel's steps in one write transaction.
type cancelTx struct{ settleTx }

func (c cancelTx) JobState(ctx context.Context, id string) (queue.State, bool, error) {
	var state string
	err := c.tx.QueryRowContext(ctx, `SELECT state FROM jobs WHERE id = ? AND state <> 'staged'`, id).Scan(&state)
	if errors.Is(err, sql.ErrNoRows) {
		return "", false, nil
	}
	return queue.State(state), err == nil, err
}

func (c cancelTx) CancelNow(ctx context.Context, id, reason string, now time.Time) error {
	var q, state string
	if err := c.tx.QueryRowContext(ctx, `SELECT queue, state FROM jobs WHERE id = ?`, id).Scan(&q, &state); err != nil {
		return err
	}
	_, err := c.tx.ExecContext(ctx, `UPDATE jobs SET state = ?, error = ?, updated_at = ? WHERE id = ?`,
		string(queue.StateCancelled), reason, toUS(now), id)
	if err == nil {
		c.tally.move(q, queue.State(state), queue.StateCancelled)
	}
	return err
}

func (c cancelTx) RequestCancel(ctx context.Context, id string, now time.Time) error {
	_, err := c.tx.ExecContext(ctx, `UPDATE jobs SET cancel_requested = 1, updated_at = ? WHERE id = ?`, toUS(now), id)
	return err
}

// DeleteJobs implements queue.Store.
func (s *Store) DeleteJobs(ctx context.Context, p queue.DeleteParams) (int, error) {
	states, err := queue.DeletableStates(p.States)
	if err != nil {
		return 0, fmt.Errorf("delete jobs: %w", err)
	}
	args := []any{toUS(p.Before)}
	for _, st := range states {
		args = append(args, string(st))
	}
	match := `SELECT id FROM jobs WHERE updated_at < ? AND state IN (` + placeholders(len(states)) + `)`
	var n int
	if p.DryRun {
		n, err = s.batch(ctx, false, match, "", p.Limit, true, args...)
	} else {
		n, err = s.deleteJobs(ctx, match, p.Limit, args...)
	}
	if err != nil {
		return 0, fmt.Errorf("delete jobs: %w", err)
	}
	return n, nil
}

// deleteJobs deletes at most limit (0: all) of the jobs match selects, in
// one write transaction, and takes their attempts out of the run-time
// histograms.
func (s *Store) deleteJobs(ctx context.Context, match string, limit int, args ...any) (int, error) {
	if limit > 0 {
		match += fmt.Sprintf(" LIMIT %d", limit)
	}
	var n int
	err := s.write(ctx, true, func(ctx context.Context, tx *sql.Tx) error {
		rows, err := tx.QueryContext(ctx, match, args...)
		if err != nil {
			return err
		}
		ids, err := scanColumn[string](rows)
		if err != nil {
			return err
		}
		list, _ := json.Marshal(ids)
		if err := forgetAttempts(ctx, tx, string(list)); err != nil {
			return err
		}
		rows, err = tx.QueryContext(ctx, `DELETE FROM jobs WHERE id IN (SELECT value FROM json_each(?)) RETURNING queue, state`, string(list))
		if err != nil {
			return err
		}
		defer rows.Close()
		for n = 0; rows.Next(); n++ {
			var q, state string
			if err := rows.Scan(&q, &state); err != nil {
				return err
			}
			s.tally.move(q, queue.State(state), "")
		}
		return rows.Err()
	})
	return n, err
}

// forgetRuns takes the attempts of the jobs ?1 (a JSON array of ids) out
// of run_slots, computing their slots and buckets as counts.go does, and
// returns the slots it changed with what they count now.
const forgetRuns = `UPDATE run_slots SET n = run_slots.n - g.n
	FROM (SELECT s.span, a.finished_at - a.finished_at % s.span AS slot, j.queue,
			CASE WHEN a.outcome IN ('succeeded', 'interrupted') THEN a.outcome ELSE 'failed' END AS class,
			(SELECT min(le_us) FROM run_buckets WHERE le_us >= a.finished_at - coalesce(a.started_at, a.finished_at)) AS le_us,
			count(*) AS n
		FROM jobs j JOIN job_attempts a ON a.job_id = j.id JOIN (SELECT 60000000 AS span UNION ALL SELECT 3600000000) s
		WHERE j.id IN (SELECT value FROM json_each(?1))
		GROUP BY 1, 2, 3, 4, 5) AS g
	WHERE run_slots.span = g.span AND run_slots.slot = g.slot AND run_slots.queue = g.queue
		AND run_slots.class = g.class AND run_slots.le_us = g.le_us
	RETURNING span, slot, n`

// forgetAttempts takes the attempts of jobs about to be deleted (ids, a
// JSON array) out of the run-time histograms, and deletes the histogram
// rows that count nothing any more.
func forgetAttempts(ctx context.Context, tx *sql.Tx, ids string) error {
	rows, err := tx.QueryContext(ctx, forgetRuns, ids)
	if err != nil {
		return err
	}
	type slot struct{ span, slot int64 }
	emptied := map[slot]bool{}
	for rows.Next() {
		var k slot
		var n int64
		if err := rows.Scan(&k.span, &k.slot, &n); err != nil {
			rows.Close()
			return err
		}
		if n <= 0 {
			emptied[k] = true
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil || len(emptied) == 0 {
		return err
	}
	var pairs [][2]int64
	for k := range emptied {
		pairs = append(pairs, [2]int64{k.span, k.slot})
	}
	list, _ := json.Marshal(pairs)
	_, err = tx.ExecContext(ctx, `DELETE FROM run_slots WHERE n <= 0 AND (span, slot) IN
		(SELECT value ->> 0, value ->> 1 FROM json_each(?))`, string(list))
	return err
}

// PruneOutput implements queue.Store: the attempts first, then the final
// attempts kept on finished jobs' rows (migration 12), at most p.Limit
// (0: all) in all.
func (s *Store) PruneOutput(ctx context.Context, p queue.PruneOutputParams) (int, error) {
	n, err := s.batch(ctx, false, `SELECT rowid FROM attempts WHERE finished_at < ? AND output IS NOT NULL`,
		`UPDATE attempts SET dropped = dropped + length(output), output = NULL WHERE rowid IN (%s)`, p.Limit, p.DryRun, toUS(p.Before))
	if err != nil {
		return 0, fmt.Errorf("prune output: %w", err)
	}
	if p.Limit > 0 && n >= p.Limit {
		return n, nil
	}
	// The attempts' outputs are gone (committed) whatever happens next: a
	// failure here still reports them.
	m, err := s.batch(ctx, false, `SELECT rowid FROM jobs WHERE finished_at < ? AND last_output IS NOT NULL`,
		`UPDATE jobs SET last_dropped = coalesce(last_dropped, 0) + length(last_output), last_output = NULL WHERE rowid IN (%s)`,
		max(p.Limit-n, 0), p.DryRun, toUS(p.Before))
	if err != nil {
		return n, fmt.Errorf("prune output: %w", err)
	}
	return n + m, nil
}

// batch runs change (a statement with %s for the rows) on at most limit
// rows that match selects (0: all) in one write transaction, or only
// counts them. The counters do not follow the change: it must not delete
// or move counted jobs (staged ones are not counted).
func (s *Store) batch(ctx context.Context, full bool, match, change string, limit int, dryRun bool, args ...any) (int, error) {
	if limit > 0 {
		match += fmt.Sprintf(" LIMIT %d", limit)
	}
	if dryRun {
		var n int
		err := s.readDB.QueryRowContext(ctx, `SELECT count(*) FROM (`+match+`)`, args...).Scan(&n)
		return n, describe(err)
	}
	var n int64
	err := s.write(ctx, full, func(ctx context.Context, tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, fmt.Sprintf(change, match), args...)
		if err != nil {
			return err
		}
		n, err = res.RowsAffected()
		return err
	})
	return int(n), err
}

// RegisterWorker implements queue.Store (an upsert).
func (s *Store) RegisterWorker(ctx context.Context, w *queue.WorkerInfo) error {
	queues, _ := json.Marshal(w.Queues)
	err := s.write(ctx, false, func(ctx context.Context, tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO workers (id, pid, host, boot_id, proc_start, queues, service, started_at, heartbeat_at)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
			ON CONFLICT (id) DO UPDATE SET heartbeat_at = excluded.heartbeat_at`,
			w.ID, w.PID, w.Host, w.BootID, int64(w.ProcStart), string(queues), w.Service, toUS(w.StartedAt), toUS(w.HeartbeatAt))
		return err
	})
	if err != nil {
		return fmt.Errorf("register worker: %w", err)
	}
	return nil
}

// UnregisterWorker implements queue.Store.
func (s *Store) UnregisterWorker(ctx context.Context, id string) error {
	err := s.write(ctx, false, func(ctx context.Context, tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `DELETE FROM workers WHERE id = ?`, id)
		return err
	})
	if err != nil {
		return fmt.Errorf("unregister worker: %w", err)
	}
	return nil
}

// ListWorkers implements queue.Store.
func (s *Store) ListWorkers(ctx context.Context) ([]*queue.WorkerInfo, error) {
	rows, err := s.readDB.QueryContext(ctx, `SELECT w.id, w.pid, w.host, w.boot_id, w.proc_start, w.queues, w.service, w.started_at,
		w.heartbeat_at, w.stop_requested, (SELECT group_concat(j.id, char(10)) FROM jobs j WHERE j.worker = w.id AND j.state = 'processing')
		FROM workers w ORDER BY w.started_at, w.id`)
	if err != nil {
		return nil, fmt.Errorf("list workers: %w", describe(err))
	}
	defer rows.Close()
	var out []*queue.WorkerInfo
	for rows.Next() {
		var w queue.WorkerInfo
		var queues string
		var start, started, hb int64
		var stop int
		var cur sql.NullString
		if err := rows.Scan(&w.ID, &w.PID, &w.Host, &w.BootID, &start, &queues, &w.Service, &started, &hb, &stop, &cur); err != nil {
			return nil, fmt.Errorf("list workers: %w", err)
		}
		w.ProcStart = uint64(start)
		_ = json.Unmarshal([]byte(queues), &w.Queues)
		w.StartedAt, w.HeartbeatAt, w.StopRequested = fromUS(started), fromUS(hb), stop != 0
		if cur.Valid && cur.String != "" {
			w.CurrentJobs = strings.Split(cur.String, "\n")
		}
		out = append(out, &w)
	}
	return out, rows.Err()
}

// RequestStop implements queue.Store.
func (s *Store) RequestStop(ctx context.Context, ids []string) error {
	err := s.write(ctx, true, func(ctx context.Context, tx *sql.Tx) error {
		if len(ids) == 0 {
			_, err := tx.ExecContext(ctx, `UPDATE workers SET stop_requested = 1`)
			return err
		}
		b, _ := json.Marshal(ids)
		_, err := tx.ExecContext(ctx, `UPDATE workers SET stop_requested = 1 WHERE id IN (SELECT value FROM json_each(?))`, string(b))
		return err
	})
	if err != nil {
		return fmt.Errorf("request stop: %w", err)
	}
	s.wake.notify()
	return nil
}

// GetConfig implements queue.Store.
func (s *Store) GetConfig(ctx context.Context) (map[string]string, error) {
	rows, err := s.readDB.QueryContext(ctx, `SELECT key, value FROM config`)
	if err != nil {
		return nil, fmt.Errorf("get config: %w", describe(err))
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
	return out, rows.Err()
}

// SetConfig implements queue.Store.
func (s *Store) SetConfig(ctx context.Context, key, value string) error {
	err := s.write(ctx, true, func(ctx context.Context, tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO config (key, value) VALUES (?, ?)
			ON CONFLICT (key) DO UPDATE SET value = excluded.value`, key, value)
		return err
	})
	if err != nil {
		return fmt.Errorf("set config: %w", err)
	}
	return nil
}
