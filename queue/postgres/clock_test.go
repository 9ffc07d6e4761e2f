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
