package queue

import (
	"context"
	"fmt"
)

// wakeFanout passes the store's wake-ups (work became runnable, a cancel
// was requested) on to every part that waits for work: each lane and the
// lease keeper has a channel of its own holding at most one pending wake-up.
type wakeFanout struct {
	store Store
	chans []chan struct{}
	svc   service
}

// add returns a new channel that receives wake-ups; call it before Start.
func (w *wakeFanout) add() chan struct{} {
	c := make(chan struct{}, 1)
	w.chans = append(w.chans, c)
	return c
}

// Start subscribes to the store's wake-ups and passes them on until Stop.
// It is safe to call twice.
func (w *wakeFanout) Start() error {
	ctx, cancel := context.WithCancel(context.Background())
	wake, err := w.store.Wakeups(ctx)
	if err != nil {
		cancel()
		return fmt.Errorf("subscribe to wake-ups: %w", err)
	}
	if !w.svc.start(func(loop context.Context) {
		// Ending the subscription closes wake, which ends the loop.
		stop := context.AfterFunc(loop, cancel)
		defer stop()
		for range wake {
			w.wakeAll()
		}
	}) {
		cancel()
	}
	return nil
}

// Stop ends the subscription and waits for the fan-out to return. It is safe
// to call twice.
func (w *wakeFanout) Stop() { w.svc.stop() }

func (w *wakeFanout) wakeAll() {
	for _, c := range w.chans {
		poke(c)
	}
}
