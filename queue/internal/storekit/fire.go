// Package storekit holds the Go logic the stores share. Each procedure runs
// inside one of a store's transactions and reaches the database through a
// small interface the store implements with its own SQL, so that the two
// stores differ only where their dialects do; Chunks, which orders an
// import's chunk writes around the store's own, is the one part that
// runs outside them. The decisions themselves come
// from the lifecycle in package queue.
package storekit

import (
	"context"
	"fmt"
	"time"

	"github.com/queuectl/queuectl/queue"
)

// FireTx is what Fire needs from a store's transaction.
type FireTx interface {
	// LockTemplate makes other fires of the template wait for this
	// transaction and returns its waiting slot (zero if none); found is
	// false when no such template exists.
	LockTemplate(ctx context.Context, name string) (pending time.Time, found bool, err error)
	// MoveCursor moves the template's cursor to cursor, never backwards.
	MoveCursor(ctx context.Context, name string, cursor time.Time) error
	// JobByFireKey finds the job a fire with this key inserted.
	JobByFireKey(ctx context.Context, key string) (id string, found bool, err error)
	// HasJobIn reports whether a job of the template is in one of states.
	HasJobIn(ctx context.Context, template string, states []queue.State) (bool, error)
	// SetWaiting makes slot the template's waiting slot, replacing any.
	SetWaiting(ctx context.Context, name string, slot time.Time, kind queue.FireKind) error
	// ClearWaiting forgets the template's waiting slot.
	ClearWaiting(ctx context.Context, name string) error
	// InsertJob inserts the slot's job under its fire key (and makes it
	// known to idle workers if the store signals within the transaction).
	InsertJob(ctx context.Context, j *queue.Job, fireKey string) error
	// IDTaken reports whether a job with this id exists.
	IDTaken(ctx context.Context, id string) (bool, error)
}

// Fire handles one fire of a template in tx: exactly one job per slot
// (another scheduler may have fired it), the template's overlap policy as
// the lifecycle decides it, the waiting slot, and the cursor.
func Fire(ctx context.Context, tx FireTx, p queue.FireParams) (queue.FireResult, error) {
	var res queue.FireResult
	pending, found, err := tx.LockTemplate(ctx, p.Template)
	if err != nil {
		return res, err
	}
	if !found {
		return res, fmt.Errorf("template %q: %w", p.Template, queue.ErrNotFound)
	}
	if p.Job == nil { // catch-up passed over this slot: only the cursor moves
		return res, tx.MoveCursor(ctx, p.Template, p.Cursor)
	}
	key := queue.FireKey(p.Template, p.Kind, p.Slot)
	existing, fired, err := tx.JobByFireKey(ctx, key)
	if err != nil {
		return res, err
	}
	if fired {
		res.JobID = existing // another scheduler fired this slot
	} else {
		if p.Overlap != queue.OverlapAllow {
			if res.Blocked, err = tx.HasJobIn(ctx, p.Template, queue.ActiveStates()); err != nil {
				return res, err
			}
		}
		action := queue.DecideOverlap(p.Overlap, res.Blocked)
		if action == queue.FireInsert && p.Unique {
			pending, err := tx.HasJobIn(ctx, p.Template, []queue.State{queue.StatePending})
			if err != nil {
				return res, err
			}
			action = queue.DecideUnique(action, pending)
			res.Pending = action == queue.FireSkip
		}
		if err := act(ctx, tx, p, key, action, &res); err != nil {
			return res, err
		}
	}
	// Slots are compared as stored: whole microseconds.
	if !res.Queued && !pending.IsZero() && pending.Equal(p.Slot.Truncate(time.Microsecond)) {
		if err := tx.ClearWaiting(ctx, p.Template); err != nil {
			return res, err
		}
	}
	if p.Kind == queue.FireManual {
		return res, nil // a manual trigger never moves the cursor
	}
	return res, tx.MoveCursor(ctx, p.Template, p.Cursor)
}

// act carries out the overlap decision for a slot not fired yet.
func act(ctx context.Context, tx FireTx, p queue.FireParams, key string, a queue.FireAction, res *queue.FireResult) error {
	switch a {
	case queue.FireQueue:
		// This run waits for the previous one, replacing any older waiting
		// run, so runs never pile up.
		res.Queued = true
		return tx.SetWaiting(ctx, p.Template, p.Slot, p.Kind)
	case queue.FireSkip:
		res.Skipped = true
		return nil
	}
	// The slot's usual id may be another job's, one not fired (its fire
	// key was not found): a copy made by enqueue --file, say. Refusing
	// it would block the template at this slot for ever: the job takes
	// an id of its own instead.
	taken, err := tx.IDTaken(ctx, p.Job.ID)
	if err != nil {
		return err
	}
	if taken {
		p.Job.ID = queue.NewID()
	}
	if err := tx.InsertJob(ctx, p.Job, key); err != nil {
		return err
	}
	res.Fired, res.JobID = true, p.Job.ID
	return nil
}
