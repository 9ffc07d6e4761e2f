package queue_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/queuectl/queuectl/internal/testutil/fakeclock"
	"github.com/queuectl/queuectl/queue"
)

// tidyingStore is a real store that is also a queue.Tidier: it hands each
// round's context to the test, and its first round fails.
type tidyingStore struct {
	queue.Store
	rounds chan context.Context
	n      int // rounds so far; only the engine's tidier touches it
}

func (s *tidyingStore) Tidy(ctx context.Context) ([]string, error) {
	s.rounds <- ctx
	s.n++
	if s.n == 1 {
		return nil, errors.New("the server went away")
	}
	return []string{"vacuum jobs"}, nil
}

// TestEngineTidiesAStoreThatAsks checks that an engine asks a store that
// tidies itself (queue.Tidier) to do so every EngineConfig.Tidy, goes on
// after a round that failed, and cancels the rounds' context when it
// stops.
func TestEngineTidiesAStoreThatAsks(t *testing.T) {
	st, _ := openStore(t)
	ts := &tidyingStore{Store: st, rounds: make(chan context.Context, 100)}
	eng := startEngine(t, ts, (&scripted{clock: fakeclock.New(t0), results: []queue.RunResult{exited(0)}}).runner(),
		queue.EngineConfig{WorkerID: "tidy-worker", Tidy: 5 * time.Millisecond})
	first := recv(t, ts.rounds, "the first tidy round")
	recv(t, ts.rounds, "a tidy round after a failed one")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := eng.Stop(ctx); err != nil {
		t.Fatalf("stop: %v", err)
	}
	if first.Err() == nil {
		t.Error("the tidy rounds' context is still live after the engine stopped")
	}
}
