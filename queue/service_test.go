package queue

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func TestServiceStartStopTwice(t *testing.T) {
	var s service
	var runs atomic.Int32
	loop := func(ctx context.Context) {
		runs.Add(1)
		<-ctx.Done()
	}
	if !s.start(loop) {
		t.Fatal("first start did not start")
	}
	if s.start(loop) {
		t.Error("second start started again")
	}
	s.stop()
	s.stop()
	if got := runs.Load(); got != 1 {
		t.Errorf("loop ran %d times, want 1", got)
	}
	if s.start(loop) {
		t.Error("start after stop started")
	}
}

func TestServiceStopBeforeStart(t *testing.T) {
	var s service
	s.stop()
	if s.start(func(context.Context) { t.Error("loop ran after stop") }) {
		t.Error("start after stop started")
	}
}

func TestEnginePartsStopTwice(t *testing.T) {
	e := NewEngine(nil, nil, EngineConfig{})
	for range 2 {
		e.lanes.Stop()
		e.leases.Stop()
		e.rescuer.Stop()
		e.wakes.Stop()
	}
}

// partsStore answers the few calls the engine's background parts make when
// there is nothing to do, and counts live wake-up subscriptions.
type partsStore struct {
	Store // any other call panics: the parts must not make it
	mu    sync.Mutex
	subs  int
}

func (s *partsStore) ClaimJobs(context.Context, ClaimParams) ([]*Job, error) { return nil, nil }
func (s *partsStore) NextRunAt(context.Context, []string) (time.Time, error) {
	return time.Time{}, nil
}
func (s *partsStore) Heartbeat(context.Context, HeartbeatParams) (HeartbeatResult, error) {
	return HeartbeatResult{}, nil
}
func (s *partsStore) ListWorkers(context.Context) ([]*WorkerInfo, error) { return nil, nil }
func (s *partsStore) RescueCandidates(context.Context, RescueParams) ([]*Job, error) {
	return nil, nil
}

func (s *partsStore) Wakeups(ctx context.Context) (<-chan struct{}, error) {
	s.mu.Lock()
	s.subs++
	s.mu.Unlock()
	c := make(chan struct{})
	context.AfterFunc(ctx, func() {
		s.mu.Lock()
		s.subs--
		s.mu.Unlock()
		close(c)
	})
	return c, nil
}

func (s *partsStore) liveSubs() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.subs
}

// Each background part of the engine can be started twice and stopped
// twice: the second start neither runs a second loop nor keeps a second
// subscription, and the second stop returns at once.
func TestEnginePartsStartStopTwice(t *testing.T) {
	st := &partsStore{}
	e := NewEngine(st, nil, EngineConfig{Lanes: []Lane{{Slots: 1}}})
	for range 2 {
		if err := e.wakes.Start(); err != nil {
			t.Fatal(err)
		}
		e.leases.Start()
		e.rescuer.Start()
		e.lanes.Start()
	}
	// The second start ends its own subscription (asynchronously).
	waitSubs(t, st, 1)
	for _, p := range []*service{&e.wakes.svc, &e.leases.svc, &e.rescuer.svc, &e.lanes.svc} {
		p.mu.Lock()
		started := p.started
		p.mu.Unlock()
		if !started {
			t.Error("a part did not start")
		}
	}
	for range 2 {
		e.lanes.Stop()
		e.leases.Stop()
		e.rescuer.Stop()
		e.wakes.Stop()
	}
	waitSubs(t, st, 0)
}

func waitSubs(t *testing.T, st *partsStore, want int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for st.liveSubs() != want {
		if time.Now().After(deadline) {
			t.Fatalf("%d wake-up subscriptions, want %d", st.liveSubs(), want)
		}
		time.Sleep(time.Millisecond) // polling, with a deadline
	}
}
