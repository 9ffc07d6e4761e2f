package postgres

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/queuectl/queuectl/queue"
)

const insertJob = `INSERT INTO jobs (id, queue, command, state, priority, attempts, max_retries, timeout_us,
	backoff_base, max_backoff_us, run_at, created_at, updated_at, env, dir, template, scheduled_at, fire_key)
	VALUES ($1, $2, $3, 'pending', $4, 0, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16)`

// insertArgs are insertJob's arguments for one pending job; fireKey is ""
// for ad-hoc jobs.
func insertArgs(j *queue.Job, fireKey string) []any {
	var env []byte
	if len(j.Env) > 0 {
		env, _ = json.Marshal(j.Env)
	}
	return []any{j.ID, j.Queue, j.Command, j.Priority, j.MaxRetries, j.Timeout.Microseconds(), j.BackoffBase,
		j.MaxBackoff.Microseconds(), j.RunAt, j.CreatedAt, j.UpdatedAt, env, nullString(j.Dir),
		nullString(j.Template), nullTime(j.ScheduledAt), nullString(fireKey)}
}

// InsertJobs implements queue.Store. The rows go in one pipelined batch
// inside one transaction; a taken id rolls back the whole batch.
func (s *Store) InsertJobs(ctx context.Context, jobs []*queue.Job) error {
	if len(jobs) == 0 {
		return nil
	}
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		return sendInserts(ctx, tx, jobs, s.channel)
	})
	if err != nil {
		return fmt.Errorf("insert jobs: %w", err)
	}
	s.wake.broadcast()
	return nil
}

// sendInserts inserts pending jobs in tx as one pipelined batch, then
// notifies channel unless it is "".
func sendInserts(ctx context.Context, tx pgx.Tx, jobs []*queue.Job, channel string) error {
	b := &pgx.Batch{}
	for _, j := range jobs {
		b.Queue(insertJob, insertArgs(j, "")...)
	}
	if channel != "" {
		b.Queue(notifySQL, channel)
	}
	br := tx.SendBatch(ctx, b)
	defer br.Close()
	for _, j := range jobs {
		if _, err := br.Exec(); err != nil {
			if isUnique(err) {
				return fmt.Errorf("%w: %q already exists", queue.ErrDuplicate, j.ID)
			}
			return err
		}
	}
	if channel != "" {
		if _, err := br.Exec(); err != nil {
			return err
		}
	}
	return br.Close()
}
