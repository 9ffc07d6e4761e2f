package postgres

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/queuectl/queuectl/queue"
)

// saveLive writes a running attempt's output so far, only while the claim
// holds, and announces it to followers (JobEvents) in the same statement.
const saveLive = `WITH l AS (
	INSERT INTO live_output (job_id, worker, attempt, output, written, updated_at)
	SELECT id, worker, attempts, $4, $5, $6 FROM jobs
	WHERE id = $1 AND worker = $2 AND attempts = $3 AND state = 'processing'
	ON CONFLICT (job_id) DO UPDATE SET worker = excluded.worker, attempt = excluded.attempt,
		output = excluded.output, written = excluded.written, updated_at = excluded.updated_at
	RETURNING 1)
	SELECT pg_notify($7, '') FROM l`

// SaveLiveOutput implements queue.Store.
func (s *Store) SaveLiveOutput(ctx context.Context, p queue.LiveOutput) error {
	if _, err := s.pool.Exec(ctx, saveLive, p.JobID, p.Worker, p.Attempt, queue.LiveTail(p.Output), p.Written, p.UpdatedAt, s.eventsChannel); err != nil {
		return fmt.Errorf("save live output: %w", err)
	}
	return nil
}

// LiveOutput implements queue.Store: the row counts only while its attempt
// is the job's running one.
func (s *Store) LiveOutput(ctx context.Context, jobID string) (*queue.LiveOutput, error) {
	l := queue.LiveOutput{JobID: jobID}
	err := s.pool.QueryRow(ctx, `SELECT l.worker, l.attempt, l.output, l.written, l.updated_at
		FROM live_output l JOIN jobs j ON j.id = l.job_id
		WHERE l.job_id = $1 AND j.state = 'processing' AND j.attempts = l.attempt AND j.worker = l.worker`, jobID).
		Scan(&l.Worker, &l.Attempt, &l.Output, &l.Written, &l.UpdatedAt)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, fmt.Errorf("live output of job %q: %w", jobID, queue.ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("live output: %w", err)
	}
	l.UpdatedAt = l.UpdatedAt.UTC()
	return &l, nil
}
