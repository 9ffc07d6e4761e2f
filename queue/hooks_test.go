package queue_test

import (
	"os"
	"slices"
	"testing"
	"time"

	"github.com/queuectl/queuectl/internal/proc"
	"github.com/queuectl/queuectl/queue"
)

// hookCalls are the commands of the runner's calls that ran a hook (every
// command but the jobs' "true"), with their timeouts.
func hookCalls(r *scripted) (cmds []string, timeouts []time.Duration) {
	for _, s := range r.calls() {
		if s.Command != "true" {
			cmds, timeouts = append(cmds, s.Command), append(timeouts, s.Timeout)
		}
	}
	return cmds, timeouts
}

// A job whose worker died, or whose lease expired, is recorded by the
// rescuer; its hooks run once for that outcome, like a worker's own
// finish: on_failure when it is retried, on_failure then on_dead when it
// ends dead. Each runs under the job's hook timeout.
func TestRescueRunsHooksOnce(t *testing.T) {
	host, err := os.Hostname()
	if err != nil {
		t.Fatal(err)
	}
	bootID := proc.BootID()
	hooks := queue.Hooks{OnSuccess: "on-success", OnFailure: "on-failure", OnDead: "on-dead", Timeout: 2 * time.Second}
	for _, tc := range []struct {
		name       string
		worker     func(t *testing.T) *queue.WorkerInfo
		maxRetries int
		at         time.Duration // when the rescuer looks, after the claim
		state      queue.State
		want       []string
	}{
		{"dead worker, retried", func(t *testing.T) *queue.WorkerInfo {
			if bootID == "" {
				t.Skip("no boot id on this system; local liveness checks are off")
			}
			pid, start := exitedPID(t)
			return &queue.WorkerInfo{ID: "gone", PID: pid, Host: host, BootID: bootID, ProcStart: start}
		}, 3, time.Second, queue.StateFailed, []string{"on-failure"}},
		{"expired lease, dead", func(*testing.T) *queue.WorkerInfo {
			return &queue.WorkerInfo{ID: "remote", PID: os.Getpid(), Host: host + "-elsewhere", BootID: "other-boot"}
		}, 0, 31 * time.Second, queue.StateDead, []string{"on-failure", "on-dead"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFakeEngine(t)
			w := tc.worker(t)
			w.StartedAt, w.HeartbeatAt = t0, t0
			if err := f.store.RegisterWorker(testCtx(t), w); err != nil {
				t.Fatal(err)
			}
			enqueue(t, f.store, queue.NewJob{ID: "held", MaxRetries: ptr(tc.maxRetries), Hooks: hooks}, t0)
			jobs, err := f.store.ClaimJobs(testCtx(t), queue.ClaimParams{Worker: w.ID, Limit: 1, Now: t0, LeaseUntil: t0.Add(30 * time.Second)})
			if err != nil || len(jobs) != 1 {
				t.Fatalf("claim: %d jobs, err %v", len(jobs), err)
			}
			f.clock.Set(t0.Add(tc.at))
			if n, err := f.eng.RescueOnce(testCtx(t)); err != nil || n != 1 {
				t.Fatalf("RescueOnce rescued %d, err %v; want 1", n, err)
			}
			if got := getJob(t, f.store, "held"); got.State != tc.state {
				t.Fatalf("state %s, want %s", got.State, tc.state)
			}
			waitFor(t, "the rescued job's hooks", func() bool {
				cmds, _ := hookCalls(f.runner)
				return len(cmds) >= len(tc.want)
			})
			// Another pass finds nothing to rescue, so runs no hook again.
			if n, err := f.eng.RescueOnce(testCtx(t)); err != nil || n != 0 {
				t.Fatalf("second RescueOnce rescued %d, err %v; want 0", n, err)
			}
			cmds, timeouts := hookCalls(f.runner)
			if !slices.Equal(cmds, tc.want) {
				t.Errorf("hooks run: %q, want %q", cmds, tc.want)
			}
			for _, d := range timeouts {
				if d != hooks.Timeout {
					t.Errorf("hook run with timeout %v, want the job's %v", d, hooks.Timeout)
				}
			}
		})
	}
}

// Hooks without a timeout of their own run under queue.HookTimeout; the
// most specific timeout wins when hooks are merged.
func TestHookTimeoutDefault(t *testing.T) {
	if got := (queue.Hooks{OnDead: "x"}).RunTimeout(); got != queue.HookTimeout {
		t.Errorf("no timeout: %v, want %v", got, queue.HookTimeout)
	}
	job := queue.Hooks{OnDead: "job", Timeout: time.Second}
	q := queue.Hooks{OnSuccess: "queue", Timeout: time.Minute}
	if got := job.Or(q); got != (queue.Hooks{OnSuccess: "queue", OnDead: "job", Timeout: time.Second}) {
		t.Errorf("job over queue: %+v", got)
	}
	if got := (queue.Hooks{OnDead: "job"}).Or(q); got.Timeout != time.Minute {
		t.Errorf("job without a timeout over queue: %v, want the queue's", got.Timeout)
	}
	if !(queue.Hooks{Timeout: time.Second}).IsZero() {
		t.Error("a timeout alone counts as a hook")
	}
}
