package queue_test

import (
	"context"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/queuectl/queuectl/internal/proc"
	"github.com/queuectl/queuectl/internal/testutil/fakeclock"
	"github.com/queuectl/queuectl/queue"
	"github.com/queuectl/queuectl/queue/sqlite"
)

// t0 is a fixed, whole-microsecond instant the fake clock starts at.
var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// waitLimit bounds every wait for something another goroutine does.
const waitLimit = 10 * time.Second

func ptr[T any](v T) *T { return &v }

func testCtx(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// openStore opens a fresh SQLite store in the test's temporary directory and
// returns it with its path, so that a test can open a second handle.
func openStore(t *testing.T) (*sqlite.Store, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "queue.db")
	return openStoreAt(t, path), path
}

func openStoreAt(t *testing.T, path string) *sqlite.Store {
	t.Helper()
	st, err := sqlite.Open(context.Background(), path)
	if err != nil {
		t.Fatalf("open store: %v", err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// enqueue submits one job through queue.Enqueue at now.
func enqueue(t *testing.T, st queue.Store, n queue.NewJob, now time.Time) *queue.Job {
	t.Helper()
	if n.Command == "" {
		n.Command = "true"
	}
	jobs, err := queue.Enqueue(testCtx(t), st, nil, []queue.NewJob{n}, now)
	if err != nil {
		t.Fatalf("enqueue %q: %v", n.ID, err)
	}
	return jobs[0]
}

func getJob(t *testing.T, st queue.Store, id string) *queue.Job {
	t.Helper()
	j, err := st.GetJob(testCtx(t), id)
	if err != nil {
		t.Fatalf("get job %s: %v", id, err)
	}
	return j
}

func history(t *testing.T, st queue.Store, id string) []*queue.Attempt {
	t.Helper()
	h, err := st.Attempts(testCtx(t), id)
	if err != nil {
		t.Fatalf("attempts of %s: %v", id, err)
	}
	return h
}

func outcomes(h []*queue.Attempt) []queue.Outcome {
	out := make([]queue.Outcome, len(h))
	for i, a := range h {
		out[i] = a.Outcome
	}
	return out
}

// exited is how a runner reports a process that exited with code.
func exited(code int) queue.RunResult { return queue.RunResult{ExitCode: code} }

// scripted is a fake Runner driven by the fake clock: each run takes `took`
// of fake time and returns the next scripted result (the last one repeats).
// It records every RunSpec it gets.
type scripted struct {
	clock   *fakeclock.Clock
	took    time.Duration
	mu      sync.Mutex
	results []queue.RunResult
	specs   []queue.RunSpec
	during  func(spec queue.RunSpec) // optional hook, called while "running"
}

func (s *scripted) runner() queue.RunnerFunc {
	return func(ctx context.Context, spec queue.RunSpec) queue.RunResult {
		s.mu.Lock()
		n := len(s.specs)
		s.specs = append(s.specs, spec)
		res := s.results[min(n, len(s.results)-1)]
		during := s.during
		s.mu.Unlock()
		res.Started = s.clock.Now()
		if during != nil {
			during(spec)
		}
		res.Finished = s.clock.Advance(s.took)
		return res
	}
}

func (s *scripted) calls() []queue.RunSpec {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]queue.RunSpec(nil), s.specs...)
}

// fakeEngine is an engine on a real store, driven by a fake clock through
// ProcessAvailable and RescueOnce (it is never started).
type fakeEngine struct {
	store  *sqlite.Store
	clock  *fakeclock.Clock
	runner *scripted
	eng    *queue.Engine
}

func newFakeEngine(t *testing.T, results ...queue.RunResult) *fakeEngine {
	t.Helper()
	st, _ := openStore(t)
	clock := fakeclock.New(t0)
	if len(results) == 0 {
		results = []queue.RunResult{exited(0)}
	}
	r := &scripted{clock: clock, took: 1500 * time.Millisecond, results: results}
	eng := queue.NewEngine(st, r.runner(), queue.EngineConfig{WorkerID: "test-worker", Clock: clock, Lease: 30 * time.Second, Processes: proc.Host{}})
	return &fakeEngine{store: st, clock: clock, runner: r, eng: eng}
}

// process runs ProcessAvailable once and checks how many jobs it claimed.
func (f *fakeEngine) process(t *testing.T, want int) {
	t.Helper()
	n, err := f.eng.ProcessAvailable(testCtx(t))
	if err != nil {
		t.Fatalf("process available: %v", err)
	}
	if n != want {
		t.Fatalf("at %s: ProcessAvailable claimed %d jobs, want %d", f.clock.Now().Format(time.RFC3339Nano), n, want)
	}
}

// recv waits for one value from c, failing the test after waitLimit.
func recv[T any](t *testing.T, c <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-c:
		return v
	case <-time.After(waitLimit):
		t.Fatalf("timed out waiting for %s", what)
		panic("unreachable")
	}
}

// waitFor polls cond until it holds, failing the test after waitLimit.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(waitLimit)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
