package storekit

import (
	"context"
	"time"

	"github.com/queuectl/queuectl/queue"
)

// ImportedTx is what SettleImported needs from a store's transaction.
type ImportedTx interface {
	SettleTx
	// AfterStates returns the jobs id runs after and their states ("" for
	// one that no longer exists).
	AfterStates(ctx context.Context, id string) (after []string, states map[string]queue.State, err error)
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
	var cancelled []string
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
