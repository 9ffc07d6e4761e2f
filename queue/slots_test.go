package queue_test

import (
	"context"
	"fmt"
	"slices"
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

// TestEngineFreesSlotWhileOutcomeWaits runs jobs in one slot while the
// first outcome's recording is held: the next OutcomesPerSlot jobs start
// meanwhile (each freed the slot when its command ended, its outcome
// waiting behind the held batch), the one after does not (so many
// outcomes may wait per slot), and a job with hooks keeps its slot until
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
			starts := make(chan string, 20)
			runner := queue.RunnerFunc(func(ctx context.Context, spec queue.RunSpec) queue.RunResult {
				starts <- spec.Command
				now := time.Now().UTC()
				return queue.RunResult{Started: now, Finished: now}
			})
			now := time.Now().UTC()
			var ids []string
			for i := range queue.OutcomesPerSlot + 2 {
				id := fmt.Sprintf("j%d", i)
				ids = append(ids, id)
				nj := queue.NewJob{ID: id, Command: id}
				if i == 0 && tc.hooks {
					nj.Hooks = queue.Hooks{OnSuccess: "hook"}
				}
				enqueue(t, st, nj, now.Add(time.Duration(i)*time.Millisecond))
			}
			startEngine(t, held, runner, queue.EngineConfig{Lanes: []queue.Lane{{Slots: 1}}})
			release := sync.OnceFunc(func() { close(held.release) })
			t.Cleanup(release) // before the engine stops

			if got := recv(t, starts, "the first job's start"); got != ids[0] {
				t.Fatalf("first start %q, want %s", got, ids[0])
			}
			// A freed slot's next job may reach the finisher before the
			// job that freed it (its slot frees before its outcome is
			// sent): the held batch may be a later job's, with the first
			// outcome waiting behind it. Either way none is recorded while
			// the next jobs start.
			first := recv(t, held.entered, "the first outcome")
			if first != ids[0] && !(tc.overlap && slices.Contains(ids[:queue.OutcomesPerSlot+1], first)) {
				t.Fatalf("first outcome recorded for %q, want %s", first, ids[0])
			}
			next := 1
			if tc.overlap {
				for ; next <= queue.OutcomesPerSlot; next++ {
					if got := recv(t, starts, ids[next]+"'s start"); got != ids[next] {
						t.Fatalf("start %q, want %s", got, ids[next])
					}
				}
			}
			select {
			case got := <-starts:
				t.Fatalf("%s started while %d outcomes waited in one slot", got, next)
			case <-time.After(absent):
			}
			release()
			go func() {
				for range held.entered {
				}
			}()
			want := ids[next:]
			if tc.hooks {
				want = append([]string{"hook"}, want...)
			}
			for _, w := range want {
				if got := recv(t, starts, w+"'s start"); got != w {
					t.Fatalf("start %q, want %q", got, w)
				}
			}
			waitFor(t, "every job completed", func() bool {
				for _, id := range ids {
					if getJob(t, st, id).State != queue.StateCompleted {
						return false
					}
				}
				return true
			})
		})
	}
}
