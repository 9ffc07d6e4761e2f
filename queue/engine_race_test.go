package queue_test

import (
	"context"
	"errors"
	"runtime"
	"testing"
	"time"

	"github.com/queuectl/queuectl/internal/proc"
	"github.com/queuectl/queuectl/internal/testutil/fakeclock"
	"github.com/queuectl/queuectl/queue"
)

// rescuingStore runs the engine's own rescue pass at the moment the engine
// records a finished attempt: the job has ended, its outcome is not stored.
type rescuingStore struct {
	queue.Store
	eng     *queue.Engine
	rescued int
}

func (s *rescuingStore) FinishJobs(ctx context.Context, fs []queue.Finish) ([]bool, error) {
	if fs[0].Record.Outcome == queue.OutcomeSucceeded {
		n, err := s.eng.RescueOnce(ctx)
		if err != nil {
			return nil, err
		}
		s.rescued += n
	}
	return s.Store.FinishJobs(ctx, fs)
}

// A job that finishes just as its own worker's rescuer runs is recorded as
// it ended, not charged as lost: it stays in the engine's running set until
// its outcome is stored. The attempt here outlives its lease on the fake
// clock, so only the running set keeps the rescuer off it.
func TestEngineJobFinishingDuringOwnRescueIsNotLost(t *testing.T) {
	base, _ := openStore(t)
	st := &rescuingStore{Store: base}
	clock := fakeclock.New(t0)
	r := &scripted{clock: clock, took: 31 * time.Second, results: []queue.RunResult{exited(0)}}
	st.eng = queue.NewEngine(st, r.runner(), queue.EngineConfig{WorkerID: "test-worker", Clock: clock, Lease: 30 * time.Second, Processes: proc.Host{}})
	enqueue(t, st, queue.NewJob{ID: "ends-now"}, t0)
	if n, err := st.eng.ProcessAvailable(testCtx(t)); err != nil || n != 1 {
		t.Fatalf("process: %d jobs, %v", n, err)
	}
	if st.rescued != 0 {
		t.Errorf("the rescuer took %d finished job(s) for lost", st.rescued)
	}
	j := getJob(t, base, "ends-now")
	if h := outcomes(history(t, base, "ends-now")); j.State != queue.StateCompleted || len(h) != 1 || h[0] != queue.OutcomeSucceeded {
		t.Fatalf("state %s history %v, want completed after one succeeded attempt", j.State, h)
	}
}

// noWakeups is a store whose wake-up subscription fails.
type noWakeups struct{ queue.Store }

func (noWakeups) Wakeups(context.Context) (<-chan struct{}, error) {
	return nil, errors.New("listen: connection refused")
}

// An engine that fails to start leaves nothing behind: no goroutine of its
// parts, and no worker registration that would look alive.
func TestEngineFailedStartLeavesNothingBehind(t *testing.T) {
	st, _ := openStore(t)
	before := runtime.NumGoroutine()
	eng := queue.NewEngine(noWakeups{st}, queue.RunnerFunc(func(context.Context, queue.RunSpec) queue.RunResult {
		return exited(0)
	}), queue.EngineConfig{})
	if err := eng.Start(testCtx(t)); err == nil {
		t.Fatal("start succeeded without wake-ups")
	}
	waitFor(t, "the engine's goroutines to end", func() bool { return runtime.NumGoroutine() <= before })
	if ws, err := st.ListWorkers(testCtx(t)); err != nil || len(ws) != 0 {
		t.Fatalf("workers after a failed start: %d (err %v), want none", len(ws), err)
	}
	// Stop after a failed start is harmless.
	if err := eng.Stop(testCtx(t)); err != nil {
		t.Fatalf("stop after a failed start: %v", err)
	}
}
