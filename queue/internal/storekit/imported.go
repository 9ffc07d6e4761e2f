package storekit

import (
	"context"
	"time"

	"github.com/queuectl/queuectl/queue"
)

// ImportedTx is what SettleImported needs from a store's transaction.
type ImportedTx interface {
	// AfterStates returns the jobs id runs after and their states ("" for
	// one that no longer exists).
	AfterStates(ctx context.Context, id string) (after []string, states map[string]queue.State, err error)
	// Release makes a waiting job pending.
	Release(ctx context.Context, id string, now time.Time) error
	// CancelWaiting cancels a waiting job, saying why.
	CancelWaiting(ctx context.Context, id, reason string, now time.Time) error
}

// SettleImported decides again, as the import becomes visible, whether
// waiting jobs of a bulk import wait: a job they run after may have
// finished while they were hidden, and the settle of that finish could not
// see them. A job whose dependencies all completed is released; one with a
// dependency that ended dead or cancelled (or was discarded) is cancelled.
func SettleImported(ctx context.Context, tx ImportedTx, ids []string, now time.Time) error {
	for _, id := range ids {
		after, states, err := tx.AfterStates(ctx, id)
		if err != nil {
			return err
		}
		state, reason, err := queue.DecideAfter(after, states)
		if err != nil {
			return err
		}
		switch state {
		case queue.StatePending:
			err = tx.Release(ctx, id, now)
		case queue.StateCancelled:
			err = tx.CancelWaiting(ctx, id, reason, now)
		}
		if err != nil {
			return err
		}
	}
	return nil
}
