package scheduler_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/queuectl/queuectl/queue"
	"github.com/queuectl/queuectl/scheduler"
)

// ctxStore records the context of every scheduler loop that reads the
// templates: one context per loop.
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

// A second Start runs no second loop, Stop twice returns, and no loop
// outlives Stop; a Start after Stop does not start again.
func TestStartStopTwice(t *testing.T) {
	st := &ctxStore{ctxs: map[context.Context]bool{}}
	s := scheduler.New(st, scheduler.Config{Tick: time.Millisecond})
	for range 2 {
		if err := s.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	deadline := time.Now().Add(10 * time.Second)
	for all, _ := st.loops(); all == 0; all, _ = st.loops() {
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
	if all, live := st.loops(); all != 1 || live != 0 {
		t.Fatalf("%d loops ran, %d still running after Stop; want 1 and 0", all, live)
	}
	if err := s.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, live := st.loops(); live != 0 {
		t.Fatalf("a Start after Stop started a loop")
	}
}
