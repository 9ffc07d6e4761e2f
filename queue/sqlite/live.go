package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/queuectl/queuectl/queue"
)

// saveLive writes a running attempt's output so far, only while the claim
// holds. The SELECT's WHERE also settles SQLite's parsing of ON CONFLICT
// after INSERT … SELECT.
const saveLive = `INSERT INTO live_output (job_id, worker, attempt, output, written, updated_at)
	SELECT id, worker, attempts, ?4, ?5, ?6 FROM jobs
	WHERE id = ?1 AND worker = ?2 AND attempts = ?3 AND state = 'processing'
	ON CONFLICT (job_id) DO UPDATE SET worker = excluded.worker, attempt = excluded.attempt,
		output = excluded.output, written = excluded.written, updated_at = excluded.updated_at`

// SaveLiveOutput implements queue.Store. It is not synced to disk: it is a
// view of work in progress, replaced within a second.
func (s *Store) SaveLiveOutput(ctx context.Context, p queue.LiveOutput) error {
	err := s.write(ctx, false, func(ctx context.Context, tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, saveLive, p.JobID, p.Worker, p.Attempt, queue.LiveTail(p.Output), p.Written, toUS(p.UpdatedAt))
		return err
	})
	if err != nil {
		return fmt.Errorf("save live output: %w", describe(err))
	}
	s.events.notify() // followers (JobEvents)
	return nil
}

// LiveOutput implements queue.Store: the row counts only while its attempt
// is the job's running one.
func (s *Store) LiveOutput(ctx context.Context, jobID string) (*queue.LiveOutput, error) {
	l := queue.LiveOutput{JobID: jobID}
	var updated int64
	err := s.readDB.QueryRowContext(ctx, `SELECT l.worker, l.attempt, l.output, l.written, l.updated_at
		FROM live_output l JOIN jobs j ON j.id = l.job_id
		WHERE l.job_id = ? AND j.state = 'processing' AND j.attempts = l.attempt AND j.worker = l.worker`, jobID).
		Scan(&l.Worker, &l.Attempt, &l.Output, &l.Written, &updated)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("live output of job %q: %w", jobID, queue.ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("live output: %w", describe(err))
	}
	l.UpdatedAt = fromUS(updated)
	return &l, nil
}
