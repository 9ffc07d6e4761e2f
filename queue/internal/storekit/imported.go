package storekit

import (
	"context"
	"time"

	"github.com/queuectl/queuectl/queue"
)

// ImportedTx is what SettleImported needs from a store's transaction.
type ImportedTx interface {
	SettleTx
	// AfterStates returns the jobs each of ids runs after with their
	// states ("" for one that no longer exists), one row per (job,
	// dependency): one query for a chunk of jobs, not one per job.
	AfterStates(ctx context.Context, ids []string) ([]Dependent, error)
}

// SettleImported decides again, as the import becomes visible, whether
// waiting jobs of a bulk import wait: a job they run after may have
// finished while they were hidden, and the settle of that finish could not
// see them. A job whose dependencies all completed is released; one with a
// dependency that ended dead or cancelled (or was discarded) is cancelled.
//
// A job it cancels is settled in turn (Settle): a job of the import that
// runs after it may be visible and waiting already (it came before it in
// the file, or sorts before it), and would otherwise wait for ever.
func SettleImported(ctx context.Context, tx ImportedTx, ids []string, now time.Time) error {
	deps, err := tx.AfterStates(ctx, ids)
	if err != nil {
		return err
	}
	after := make(map[string][]string, len(ids))
	states := make(map[string]map[string]queue.State, len(ids))
	for _, d := range deps {
		after[d.JobID] = append(after[d.JobID], d.DepID)
		if states[d.JobID] == nil {
			states[d.JobID] = map[string]queue.State{}
		}
		states[d.JobID][d.DepID] = d.DepState
	}
	var cancelled []string
	for _, id := range ids {
		state, reason, err := queue.DecideAfter(after[id], states[id])
		if err != nil {
			return err
		}
		switch state {
		case queue.StatePending:
			err = tx.Release(ctx, id, now)
		case queue.StateCancelled:
			err = tx.CancelWaiting(ctx, id, reason, now)
			cancelled = append(cancelled, id)
		}
		if err != nil {
			return err
		}
	}
	if len(cancelled) > 0 {
		if _, err := Settle(ctx, tx, cancelled, now); err != nil {
			return err
		}
	}
	return nil
}
