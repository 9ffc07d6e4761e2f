package postgres

import (
	"context"
	"fmt"
	"time"

	"github.com/queuectl/queuectl/queue"
)

// RegisterWorker implements queue.Store (an upsert).
func (s *Store) RegisterWorker(ctx context.Context, w *queue.WorkerInfo) error {
	_, err := s.pool.Exec(ctx, `INSERT INTO workers (id, pid, host, boot_id, proc_start, queues, started_at, heartbeat_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
		ON CONFLICT (id) DO UPDATE SET heartbeat_at = excluded.heartbeat_at`,
		w.ID, w.PID, w.Host, w.BootID, int64(w.ProcStart), w.Queues, w.StartedAt, w.HeartbeatAt)
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
	defer rows.Close()
	var out []*queue.WorkerInfo
	for rows.Next() {
		var w queue.WorkerInfo
		var start int64
		var started, hb time.Time
		if err := rows.Scan(&w.ID, &w.PID, &w.Host, &w.BootID, &start, &w.Queues, &started, &hb, &w.StopRequested,
			&w.CurrentJobs); err != nil {
			return nil, fmt.Errorf("list workers: %w", err)
		}
		w.ProcStart = uint64(start)
		w.StartedAt, w.HeartbeatAt = started.UTC(), hb.UTC()
		out = append(out, &w)
	}
	if err := rows.Err(); err != nil {
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
	rows, err := s.pool.Query(ctx, `SELECT key, value FROM config`)
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
