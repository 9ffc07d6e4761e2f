package queue_test

import (
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/queuectl/queuectl/internal/proc"
	"github.com/queuectl/queuectl/internal/testutil/fakeclock"
	"github.com/queuectl/queuectl/queue"
)

// A running attempt's output is saved while it changes, readable from
// another handle, and gone once the attempt is recorded.
func TestEngineSavesLiveOutput(t *testing.T) {
	st, path := openStore(t)
	other := openStoreAt(t, path)
	clock := fakeclock.New(t0)
	r := &scripted{clock: clock, took: time.Second, results: []queue.RunResult{{ExitCode: 0, Output: []byte("step 1\nstep 2\n")}}}
	var mu sync.Mutex
	out := []byte("step 1\n")
	r.during = func(spec queue.RunSpec) {
		spec.Live(func() ([]byte, int64) {
			mu.Lock()
			defer mu.Unlock()
			return append([]byte(nil), out...), int64(len(out))
		})
		waitFor(t, "the first line saved", func() bool {
			l, err := other.LiveOutput(testCtx(t), "live")
			return err == nil && string(l.Output) == "step 1\n" && l.Written == 7 && l.Attempt == 1
		})
		mu.Lock()
		out = append(out, "step 2\n"...)
		mu.Unlock()
		waitFor(t, "the second line saved", func() bool {
			l, err := other.LiveOutput(testCtx(t), "live")
			return err == nil && string(l.Output) == "step 1\nstep 2\n" && l.Written == 14
		})
	}
	eng := queue.NewEngine(st, r.runner(), queue.EngineConfig{WorkerID: "live-worker", Clock: clock,
		LiveOutput: 10 * time.Millisecond, Processes: proc.Host{}})
	enqueue(t, st, queue.NewJob{ID: "live", Command: "echo step 1; echo step 2"}, t0)
	if n, err := eng.ProcessAvailable(testCtx(t)); err != nil || n != 1 {
		t.Fatalf("process available: %d, %v", n, err)
	}
	waitFor(t, "the job to complete", func() bool { return getJob(t, st, "live").State == queue.StateCompleted })
	if _, err := other.LiveOutput(testCtx(t), "live"); !errors.Is(err, queue.ErrNotFound) {
		t.Fatalf("live output after the attempt was recorded: %v, want ErrNotFound", err)
	}
}
