package storekit

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/queuectl/queuectl/queue"
)

// CancelTx is what Cancel needs from a store's transaction.
type CancelTx interface {
	SettleTx // the cancelled job's dependents follow it
	// JobState returns the job's state, locking its row where the dialect
	// can; found is false when no such job exists.
	JobState(ctx context.Context, id string) (state queue.State, found bool, err error)
	// CancelNow moves the job to cancelled with the given error.
	CancelNow(ctx context.Context, id, reason string, now time.Time) error
	// RequestCancel marks the running job for its worker to stop, and wakes
	// the worker's heartbeat if the store signals within the transaction.
	RequestCancel(ctx context.Context, id string, now time.Time) error
}

// Cancel carries out a user's cancel of job id in tx as the lifecycle
// decides it, and returns the state the job was in.
func Cancel(ctx context.Context, tx CancelTx, id string, now time.Time) (queue.State, error) {
	was, found, err := tx.JobState(ctx, id)
	if err != nil {
		return "", err
	}
	if !found {
		return "", fmt.Errorf("job %q: %w", id, queue.ErrNotFound)
	}
	action, err := queue.DecideCancel(id, was)
	switch action {
	case queue.CancelNow:
		if err = tx.CancelNow(ctx, id, queue.CancelledByUser, now); err == nil {
			_, err = Settle(ctx, tx, []string{id}, now)
		}
	case queue.CancelRequest:
		err = tx.RequestCancel(ctx, id, now)
	}
	return was, err
}

// NoOutput explains why no attempt of job id matched an output query: the
// job does not exist (getJob's error), it has no attempt number (when
// number > 0), or none of its attempts has finished yet.
func NoOutput(ctx context.Context, getJob func(context.Context, string) (*queue.Job, error), id string, number int) error {
	j, err := getJob(ctx, id)
	if err != nil {
		return err
	}
	if j.State == queue.StateProcessing && (number == 0 || number == j.Attempts) {
		// Its output is recorded when it ends; until then it is followed.
		return fmt.Errorf("job %q attempt %d is running, its output is recorded when it ends (output -f follows it): %w",
			id, j.Attempts, queue.ErrNotFound)
	}
	if number > 0 {
		return fmt.Errorf("job %q attempt %d: %w", id, number, queue.ErrNotFound)
	}
	if j.State.Finished() {
		// Cancelled (or its dependencies ended) before it ran: it never will.
		return fmt.Errorf("job %q is %s and never ran: it has no output: %w", id, j.State, queue.ErrNotFound)
	}
	return fmt.Errorf("job %q has no finished attempt yet: %w", id, queue.ErrNotFound)
}

// NoOutputAt is OutputAt's error when the job's history has no attempt at
// index i: ErrNotFound for the job, or for the attempt (named by its place
// counted from 1, as output --nth counts).
func NoOutputAt(ctx context.Context, getJob func(context.Context, string) (*queue.Job, error), id string, i int) error {
	if _, err := getJob(ctx, id); err != nil {
		return err
	}
	return fmt.Errorf("job %q: its history has no attempt #%d (1 is the oldest): %w", id, i+1, queue.ErrNotFound)
}

// HeartbeatError wraps a heartbeat's error (nil stays nil); queue.ErrNotFound
// from the store means the worker is not registered and names it.
func HeartbeatError(worker string, err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, queue.ErrNotFound):
		return fmt.Errorf("heartbeat: worker %s: %w", worker, queue.ErrNotFound)
	}
	return fmt.Errorf("heartbeat: %w", err)
}
