package queue

import (
	"context"
	"sync/atomic"
	"testing"
	"time"
)

// TestGatherFreeSlotsWaitsForEverySlot checks that a lane about to claim
// waits until every slot is free, not until some are: a freed slot while
// others are busy does not end the wait, the last one does.
func TestGatherFreeSlotsWaitsForEverySlot(t *testing.T) {
	var busy atomic.Int64
	busy.Store(3)
	freed := make(chan struct{}, 1)
	done := make(chan struct{})
	go func() {
		gatherFreeSlots(context.Background(), time.Hour, freed, func() int { return int(busy.Load()) })
		close(done)
	}()
	for busy.Load() > 1 {
		busy.Add(-1)
		freed <- struct{}{}
		select {
		case <-done:
			t.Fatalf("gathering ended with %d of 4 slots still busy", busy.Load())
		case <-time.After(50 * time.Millisecond):
		}
	}
	busy.Store(0)
	freed <- struct{}{}
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("gathering did not end when every slot was free")
	}
}

// TestGatherFreeSlotsIsBounded checks that gathering ends at its bound
// with slots still busy, at once for an idle lane, and when its context
// ends.
func TestGatherFreeSlotsIsBounded(t *testing.T) {
	freed := make(chan struct{})
	for _, c := range []struct {
		name string
		wait time.Duration
		busy int
		ctx  func() context.Context
	}{
		{"bound", 20 * time.Millisecond, 2, context.Background},
		{"idle lane", time.Hour, 0, context.Background},
		{"context ended", time.Hour, 2, func() context.Context {
			ctx, cancel := context.WithCancel(context.Background())
			cancel()
			return ctx
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			done := make(chan struct{})
			go func() {
				gatherFreeSlots(c.ctx(), c.wait, freed, func() int { return c.busy })
				close(done)
			}()
			select {
			case <-done:
			case <-time.After(10 * time.Second):
				t.Fatal("gathering did not end")
			}
		})
	}
}
