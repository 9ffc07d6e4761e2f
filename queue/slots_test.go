package queue_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/queuectl/queuectl/queue"
)

// heldFinishes is a store whose FinishJobs calls wait until release is
// closed; each call's first job id is sent on entered as it arrives.
type heldFinishes struct {
	queue.Store
	entered chan string
	release chan struct{}
}

func (s *heldFinishes) FinishJobs(ctx context.Context, fs []queue.Finish) ([]bool, error) {
	s.entered <- fs[0].JobID
	<-s.release
	return s.Store.FinishJobs(ctx, fs)
}

// absent is how long a test watches for something that must not happen.
const absent = 300 * time.Millisecond

// TestEngineFreesSlotWhileOutcomeWaits runs three jobs in one slot while
// the first outcome's recording is held: the second job starts meanwhile
// (the slot freed when the first command ended), the third does not (one
// outcome may wait per slot), and a job with hooks keeps its slot until
// its outcome is recorded and its hooks ran.
func TestEngineFreesSlotWhileOutcomeWaits(t *testing.T) {
	for _, tc := range []struct {
		name    string
		hooks   bool
		overlap bool
	}{
		{"without hooks", false, true},
		{"with hooks", true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st, _ := openStore(t)
			held := &heldFinishes{Store: st, entered: make(chan string, 10), release: make(chan struct{})}
			starts := make(chan string, 10)
			runner := queue.RunnerFunc(func(ctx context.Context, spec queue.RunSpec) queue.RunResult {
				starts <- spec.Command
				now := time.Now().UTC()
				return queue.RunResult{Started: now, Finished: now}
			})
			now := time.Now().UTC()
			first := queue.NewJob{ID: "a", Command: "a"}
			if tc.hooks {
				first.Hooks = queue.Hooks{OnSuccess: "hook"}
			}
			enqueue(t, st, first, now)
			enqueue(t, st, queue.NewJob{ID: "b", Command: "b"}, now.Add(time.Millisecond))
			enqueue(t, st, queue.NewJob{ID: "c", Command: "c"}, now.Add(2*time.Millisecond))
			startEngine(t, held, runner, queue.EngineConfig{Lanes: []queue.Lane{{Slots: 1}}})
			release := sync.OnceFunc(func() { close(held.release) })
			t.Cleanup(release) // before the engine stops

			if got := recv(t, starts, "the first job's start"); got != "a" {
				t.Fatalf("first start %q, want a", got)
			}
			// a's slot frees before its outcome goes to the finisher, so
			// without hooks b may be claimed, run and sent first: then b's
			// batch is the one held, and a's outcome waits behind it.
			// Either way a's outcome is not recorded while b starts.
			if got := recv(t, held.entered, "the first outcome"); got != "a" && !(tc.overlap && got == "b") {
				t.Fatalf("first outcome recorded for %q, want a", got)
			}
			if tc.overlap {
				if got := recv(t, starts, "the second job's start"); got != "b" {
					t.Fatalf("second start %q, want b", got)
				}
			}
			select {
			case got := <-starts:
				t.Fatalf("%s started while a's outcome was held", got)
			case <-time.After(absent):
			}
			release()
			go func() {
				for range held.entered {
				}
			}()
			want := []string{"b", "c"}
			if tc.hooks {
				want = []string{"hook", "b", "c"}
			}
			if !tc.overlap {
				for _, w := range want {
					if got := recv(t, starts, w+"'s start"); got != w {
						t.Fatalf("start %q, want %q", got, w)
					}
				}
			}
			waitFor(t, "every job completed", func() bool {
				for _, id := range []string{"a", "b", "c"} {
					if getJob(t, st, id).State != queue.StateCompleted {
						return false
					}
				}
				return true
			})
		})
	}
}
