package storekit

import (
	"context"
	"time"

	"github.com/queuectl/queuectl/queue"
)

// Dependent is a waiting job, one of the jobs it runs after, and that
// job's state ("" when it no longer exists).
type Dependent struct {
	JobID, DepID string
	DepState     queue.State
}

// SettleTx is what Settle needs from a store's transaction.
type SettleTx interface {
	// WaitingDependents returns the waiting jobs that run after any of
	// ids, one row per (job, dependency among ids), each job locked
	// against another settle where the dialect can, in job id order.
	WaitingDependents(ctx context.Context, ids []string) ([]Dependent, error)
	// Blocked reports whether the job runs after a job that exists and
	// has not completed (a dependency deleted by retention had completed).
	Blocked(ctx context.Context, id string) (bool, error)
	// Release moves the waiting job to pending, due no earlier than now.
	Release(ctx context.Context, id string, now time.Time) error
	// CancelWaiting moves the waiting job to cancelled with the reason.
	CancelWaiting(ctx context.Context, id, reason string, now time.Time) error
}

// Settle applies what the states of jobs ids mean for the jobs waiting on
// them, as the lifecycle decides (DecideDependent): a job whose
// dependencies all completed is released; a job with a dependency that
// ended dead or cancelled (or was discarded) is cancelled, and so on down
// its own dependents. It reports whether a job was released.
func Settle(ctx context.Context, tx SettleTx, ids []string, now time.Time) (released bool, err error) {
	for len(ids) > 0 {
		deps, err := tx.WaitingDependents(ctx, ids)
		if err != nil {
			return released, err
		}
		ids = nil
		settled := map[string]bool{}
		for _, d := range deps {
			if settled[d.JobID] {
				continue
			}
			switch act, reason := queue.DecideDependent(d.DepID, d.DepState); act {
			case queue.DependentCancel:
				if err := tx.CancelWaiting(ctx, d.JobID, reason, now); err != nil {
					return released, err
				}
				settled[d.JobID] = true
				ids = append(ids, d.JobID) // its own dependents follow it
			case queue.DependentReady:
				blocked, err := tx.Blocked(ctx, d.JobID)
				if err != nil {
					return released, err
				}
				if !blocked {
					if err := tx.Release(ctx, d.JobID, now); err != nil {
						return released, err
					}
					settled[d.JobID], released = true, true
				}
			}
		}
	}
	return released, nil
}
