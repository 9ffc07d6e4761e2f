package queue

import (
	"context"
	"sync"
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
// with slots still busy, after its yields when told not to wait, at once
// for an idle lane, and when its context ends.
func TestGatherFreeSlotsIsBounded(t *testing.T) {
	freed := make(chan struct{})
	for _, c := range []struct {
		name string
		wait time.Duration
		busy int
		ctx  func() context.Context
	}{
		{"bound", 20 * time.Millisecond, 2, context.Background},
		{"no wait", 0, 2, context.Background},
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

// TestGatherWaitsOnlyForJobsShorterThanClaims checks the lane's choice:
// it waits for busy slots while its jobs take less time than its claims,
// and refills each slot as it frees once they take longer; a lane that
// has seen neither a claim nor a job does not wait.
func TestGatherWaitsOnlyForJobsShorterThanClaims(t *testing.T) {
	var mu sync.Mutex
	var p lanePace
	if w := p.gatherWait(&mu); w != 0 {
		t.Fatalf("before any sample: wait %v, want 0", w)
	}
	p.claimed(200 * time.Microsecond)
	p.ran(10 * time.Microsecond)
	if w := p.gatherWait(&mu); w != batchWait {
		t.Fatalf("jobs of 10µs, claims of 200µs: wait %v, want %v", w, batchWait)
	}
	// Jobs grow to 2 ms: the average passes the claims' within a few.
	for i := 0; i < 20; i++ {
		p.ran(2 * time.Millisecond)
	}
	if w := p.gatherWait(&mu); w != 0 {
		t.Fatalf("jobs of 2ms, claims of 200µs: wait %v, want 0", w)
	}
	// Claims slow down past the jobs (a distant database): waiting pays again.
	for i := 0; i < 40; i++ {
		p.claimed(5 * time.Millisecond)
	}
	if w := p.gatherWait(&mu); w != batchWait {
		t.Fatalf("jobs of 2ms, claims of 5ms: wait %v, want %v", w, batchWait)
	}
}
