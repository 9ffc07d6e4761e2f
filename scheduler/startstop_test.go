package scheduler_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/queuectl/queuectl/internal/testutil/fakeclock"
	"github.com/queuectl/queuectl/internal/testutil/syncbuf"
	"github.com/queuectl/queuectl/queue"
	"github.com/queuectl/queuectl/scheduler"
	"github.com/rs/zerolog"
)

// ctxStore records the context of every read of the templates (each tick
// has its own, ended with the tick or its loop).
type ctxStore struct {
	scheduler.Store
	mu   sync.Mutex
	ctxs map[context.Context]bool
}

func (s *ctxStore) Templates(ctx context.Context) ([]*queue.Template, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.ctxs[ctx] = true
	return nil, nil
}

func (s *ctxStore) GetConfig(context.Context) (map[string]string, error) { return nil, nil }
func (s *ctxStore) Queues(context.Context) ([]queue.QueueConfig, error)  { return nil, nil }

func (s *ctxStore) loops() (all, live int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for ctx := range s.ctxs {
		all++
		if ctx.Err() == nil {
			live++
		}
	}
	return all, live
}

// blockingStore's reads of the templates wait until their context ends:
// a loop makes one read, held until Stop, so the reads count the loops.
type blockingStore struct {
	ctxStore
	calls atomic.Int32
}

func (s *blockingStore) Templates(ctx context.Context) ([]*queue.Template, error) {
	s.calls.Add(1)
	s.ctxStore.Templates(ctx)
	<-ctx.Done()
	return nil, ctx.Err()
}

// A second Start runs no second loop, Stop twice returns, and no loop
// outlives Stop; a Start after Stop does not start again.
func TestStartStopTwice(t *testing.T) {
	st := &blockingStore{ctxStore: ctxStore{ctxs: map[context.Context]bool{}}}
	s := scheduler.New(st, scheduler.Config{Tick: time.Millisecond, TickTimeout: time.Hour})
	for range 2 {
		if err := s.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	deadline := time.Now().Add(10 * time.Second)
	for st.calls.Load() == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the scheduler never ticked")
		}
		time.Sleep(time.Millisecond) // polling, with a deadline
	}
	for range 2 {
		if err := s.Stop(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	if all, live := st.loops(); st.calls.Load() != 1 || all != 1 || live != 0 {
		t.Fatalf("%d loops ran, %d still running after Stop; want 1 and 0", st.calls.Load(), live)
	}
	if err := s.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, live := st.loops(); live != 0 {
		t.Fatalf("a Start after Stop started a loop")
	}
}

// failingStore fails its first reads of the templates, as a database that
// is away does, then answers.
type failingStore struct {
	ctxStore
	fails atomic.Int32
}

func (s *failingStore) Templates(ctx context.Context) ([]*queue.Template, error) {
	if s.fails.Add(-1) >= 0 {
		return nil, errors.New("connection refused")
	}
	return s.ctxStore.Templates(ctx)
}

// A tick that keeps failing logs its error once (then once a minute), not
// at every tick, and the scheduler says when its ticks work again.
func TestFailingTicksLogOnce(t *testing.T) {
	st := &failingStore{ctxStore: ctxStore{ctxs: map[context.Context]bool{}}}
	st.fails.Store(50)
	var logs syncbuf.Buffer
	clock := fakeclock.New(time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)) // still: the minute never passes
	s := scheduler.New(st, scheduler.Config{Tick: time.Millisecond, Clock: clock, Log: zerolog.New(&logs)})
	if err := s.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer s.Stop(context.Background())
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(logs.String(), "scheduler ticks again") {
		if time.Now().After(deadline) {
			t.Fatalf("the scheduler never said its ticks work again:\n%s", logs.String())
		}
		time.Sleep(time.Millisecond) // polling, with a deadline
	}
	out := logs.String()
	if n := strings.Count(out, `"message":"scheduler tick"`); n != 1 {
		t.Fatalf("%d error lines for 50 failed ticks within a minute, want 1:\n%s", n, out)
	}
	if !strings.Contains(out, `"failures":50,"message":"scheduler ticks again"`) {
		t.Fatalf("the recovery line does not count the failures:\n%s", out)
	}
}

// stuckStore's first read of the templates gets no answer until its
// context ends, as on a connection whose packets are dropped; later reads
// answer.
type stuckStore struct {
	ctxStore
	stuck atomic.Bool
}

func (s *stuckStore) Templates(ctx context.Context) ([]*queue.Template, error) {
	if !s.stuck.Swap(true) {
		<-ctx.Done()
		return nil, ctx.Err()
	}
	return s.ctxStore.Templates(ctx)
}

// A tick that gets no answer is given up after the tick timeout and the
// next tick runs, rather than waiting as long as the connection lasts.
func TestStuckTickIsGivenUp(t *testing.T) {
	st := &stuckStore{ctxStore: ctxStore{ctxs: map[context.Context]bool{}}}
	var logs syncbuf.Buffer
	s := scheduler.New(st, scheduler.Config{Tick: time.Millisecond, TickTimeout: 50 * time.Millisecond, Log: zerolog.New(&logs)})
	if err := s.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer s.Stop(context.Background())
	deadline := time.Now().Add(10 * time.Second)
	for all, _ := st.loops(); all == 0; all, _ = st.loops() {
		if time.Now().After(deadline) {
			t.Fatalf("no tick after the stuck one:\n%s", logs.String())
		}
		time.Sleep(time.Millisecond) // polling, with a deadline
	}
	if !strings.Contains(logs.String(), "deadline exceeded") {
		t.Errorf("the stuck tick was not logged:\n%s", logs.String())
	}
}
