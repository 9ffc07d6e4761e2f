package postgres_test

import (
	"context"
	"testing"
	"time"

	"github.com/queuectl/queuectl/internal/proc"
	"github.com/queuectl/queuectl/queue"
)

// skewedClock is a host clock that runs off the true time by a fixed amount.
type skewedClock time.Duration

func (c skewedClock) Now() time.Time { return time.Now().UTC().Add(time.Duration(c)) }

// Leases run on the database's clock: a worker whose clock runs behind
// does not take a lease that has already ended, and a rescuer whose clock
// runs ahead does not see a live lease as ended, or a live worker as
// silent. Without that, either skew rescues a running job at once.
func TestSkewedClocksNeverRescueALiveJob(t *testing.T) {
	const lease = 2 * time.Second
	for _, tc := range []struct {
		name            string
		runner, rescuer time.Duration // each host's clock error
	}{
		{"rescuer ahead", 0, time.Hour},
		{"runner behind", -time.Hour, 0},
		{"runner ahead, rescuer behind", time.Hour, -time.Hour},
		{"runner behind, rescuer ahead", -time.Hour, time.Hour},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, u := newSchema(t)
			st := open(t, u)
			// Due two hours ago, so that a worker an hour behind claims it
			// (run_at is compared with the claiming worker's clock).
			j, err := queue.NewJob{ID: "live", Command: "true"}.Resolve(queue.DefaultSettings(), time.Now().Add(-2*time.Hour))
			if err != nil {
				t.Fatal(err)
			}
			if err := st.InsertJobs(tctx(t), []*queue.Job{j}); err != nil {
				t.Fatal(err)
			}
			started, stopped := make(chan struct{}), make(chan struct{})
			runner := queue.RunnerFunc(func(ctx context.Context, _ queue.RunSpec) queue.RunResult {
				close(started)
				<-ctx.Done()
				close(stopped)
				return queue.RunResult{ExitCode: -1, Canceled: true}
			})
			eng := queue.NewEngine(st, runner, queue.EngineConfig{
				WorkerID: "runner", Host: "runner-host", Lease: lease, CancelPoll: 100 * time.Millisecond,
				Clock: skewedClock(tc.runner), Processes: proc.Host{},
			})
			if err := eng.Start(tctx(t)); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() {
				ctx, cancel := context.WithTimeout(context.Background(), time.Millisecond)
				defer cancel()
				eng.Stop(ctx)
			})
			select {
			case <-started:
			case <-time.After(10 * time.Second):
				t.Fatal("the job did not start")
			}

			// Another host, so that only leases and heartbeats count.
			rescuer := queue.NewEngine(open(t, u), runner, queue.EngineConfig{
				WorkerID: "rescuer", Host: "rescuer-host", Lease: lease,
				Clock: skewedClock(tc.rescuer), Processes: proc.Host{},
			})
			// Rescue passes over two leases: every renewal must keep the
			// job, and a skewed clock must not take it.
			for end := time.Now().Add(2 * lease); time.Now().Before(end); time.Sleep(50 * time.Millisecond) {
				if n, err := rescuer.RescueOnce(tctx(t)); err != nil || n != 0 {
					t.Fatalf("rescue pass: rescued %d, err %v; want none", n, err)
				}
				select {
				case <-stopped:
					t.Fatal("the running job was stopped")
				default:
				}
			}
			j, err = st.GetJob(tctx(t), "live")
			if err != nil {
				t.Fatal(err)
			}
			if j.State != queue.StateProcessing || j.Worker != "runner" || j.Attempts != 1 {
				t.Fatalf("job %s by %q, attempt %d; want processing by runner, attempt 1", j.State, j.Worker, j.Attempts)
			}
			ws, err := st.ListWorkers(tctx(t))
			if err != nil || len(ws) != 1 || ws[0].ID != "runner" {
				t.Fatalf("workers %v (err %v), want the runner still registered", ws, err)
			}
		})
	}
}

// A queue's rate limit holds across hosts whose clocks disagree: its
// starts are counted on the database's clock, so a host an hour ahead or
// behind neither misses the starts another host just made (and starts
// more) nor keeps counting them after the period (and starts none).
func TestSkewedClocksShareOneRateLimit(t *testing.T) {
	const per = 2 * time.Second
	for _, tc := range []struct {
		name          string
		first, second time.Duration // each claiming host's clock error
	}{
		{"second ahead", 0, time.Hour},
		{"second behind", 0, -time.Hour},
		{"first ahead", time.Hour, 0},
		{"first behind", -time.Hour, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, u := newSchema(t)
			st := open(t, u)
			// Due two hours ago, so that a worker an hour behind claims them.
			var jobs []*queue.Job
			for _, id := range []string{"a", "b", "c", "d", "e", "f"} {
				j, err := queue.NewJob{ID: id, Queue: "q", Command: "true"}.Resolve(queue.DefaultSettings(), time.Now().Add(-2*time.Hour))
				if err != nil {
					t.Fatal(err)
				}
				jobs = append(jobs, j)
			}
			if err := st.InsertJobs(tctx(t), jobs); err != nil {
				t.Fatal(err)
			}
			if err := st.UpdateQueueControls(tctx(t), queue.ControlUpdate{Names: []string{"q"}, Rate: &queue.RateLimit{N: 2, Per: per}}); err != nil {
				t.Fatal(err)
			}
			claim := func(skew time.Duration, worker string) int {
				now := skewedClock(skew).Now()
				got, err := st.ClaimJobs(tctx(t), queue.ClaimParams{Worker: worker, Queues: []string{"q"}, Limit: 6, Now: now, LeaseUntil: now.Add(time.Minute)})
				if err != nil {
					t.Fatal(err)
				}
				return len(got)
			}
			start := time.Now()
			if n := claim(tc.first, "first"); n != 2 {
				t.Fatalf("the first host claimed %d jobs, want the limit's 2", n)
			}
			n := claim(tc.second, "second")
			if n != 0 && time.Since(start) < per {
				t.Fatalf("the second host claimed %d more jobs within the period, want none (limit 2 per %s)", n, per)
			}
			for deadline := time.Now().Add(5 * per); n == 0; n = claim(tc.second, "second") {
				if time.Now().After(deadline) {
					t.Fatalf("the second host claimed nothing %s after the first host's starts, want 2 once the period passed", 5*per)
				}
				time.Sleep(50 * time.Millisecond) // polling the claim: the period passes on the server's clock
			}
			if n != 2 {
				t.Fatalf("the second host claimed %d jobs once the period passed, want 2", n)
			}
		})
	}
}
