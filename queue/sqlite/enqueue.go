package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"

	"github.com/queuectl/queuectl/queue"
)

const insertJob = `INSERT INTO jobs (id, queue, command, state, priority, attempts, max_retries, timeout_us,
	backoff_base, max_backoff_us, run_at, created_at, updated_at, env, dir, template, scheduled_at, fire_key)
	VALUES (?, ?, ?, 'pending', ?, 0, ?, ?, ?, ?, ?, ?, ?10, ?, ?, ?, ?, ?)`

// insertPlainJob is insertJob for the common job with no environment,
// directory or template: binding values, not SQLite, dominates a bulk
// enqueue, so it binds only the eleven that are set.
const insertPlainJob = `INSERT INTO jobs (id, queue, command, state, priority, attempts, max_retries, timeout_us,
	backoff_base, max_backoff_us, run_at, created_at, updated_at)
	VALUES (?, ?, ?, 'pending', ?, 0, ?, ?, ?, ?, ?, ?, ?10)`

// InsertJobs implements queue.Store.
func (s *Store) InsertJobs(ctx context.Context, jobs []*queue.Job) error {
	if len(jobs) == 0 {
		return nil
	}
	err := s.write(ctx, true, func(tx *sql.Tx) error {
		var full, plain *sql.Stmt
		var err error
		for _, j := range jobs {
			if len(j.Env) == 0 && j.Dir == "" && j.Template == "" && j.ScheduledAt.IsZero() {
				if plain == nil {
					if plain, err = s.stmt(ctx, tx, insertPlainJob); err != nil {
						return err
					}
				}
				_, err = plain.ExecContext(ctx, j.ID, j.Queue, j.Command, j.Priority, j.MaxRetries,
					j.Timeout.Microseconds(), j.BackoffBase, j.MaxBackoff.Microseconds(), toUS(j.RunAt), toUS(j.CreatedAt))
				if isUnique(err) {
					err = fmt.Errorf("%w: %q already exists", queue.ErrDuplicate, j.ID)
				}
			} else {
				if full == nil {
					if full, err = s.stmt(ctx, tx, insertJob); err != nil {
						return err
					}
				}
				err = execInsert(ctx, full, j, "")
			}
			if err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("insert jobs: %w", err)
	}
	s.wake.notify()
	return nil
}

// execInsert inserts one pending job; fireKey is "" for ad-hoc jobs. A
// job's updated_at starts equal to its created_at. extra are the values of
// columns st has after fire_key.
func execInsert(ctx context.Context, st *sql.Stmt, j *queue.Job, fireKey string, extra ...any) error {
	var env sql.NullString
	if len(j.Env) > 0 {
		b, _ := json.Marshal(j.Env)
		env = sql.NullString{String: string(b), Valid: true}
	}
	args := append([]any{j.ID, j.Queue, j.Command, j.Priority, j.MaxRetries, j.Timeout.Microseconds(),
		j.BackoffBase, j.MaxBackoff.Microseconds(), toUS(j.RunAt), toUS(j.CreatedAt), env,
		nullString(j.Dir), nullString(j.Template), toUSNull(j.ScheduledAt), nullString(fireKey)}, extra...)
	_, err := st.ExecContext(ctx, args...)
	if isUnique(err) {
		return fmt.Errorf("%w: %q already exists", queue.ErrDuplicate, j.ID)
	}
	return err
}
