package bench

import (
	"context"
	"fmt"
	"sort"
	"time"

	"github.com/queuectl/queuectl/queue"
)

// The queue-limit scenarios: what the claim's limit checks cost the engine,
// and how closely a rate limit holds with several worker processes.

// rateLimit is the limit the ratelimit scenario holds its workers to.
var rateLimit = queue.RateLimit{N: 50, Per: time.Second}

// rateWorkers is how many worker processes share the rate-limited queue.
const rateWorkers = 4

// limitCases are the limits scenario's queues: none, a max_running and a
// rate_limit that never bind (so every claim takes the limited path: counts,
// and on PostgreSQL the queue row's lock).
var limitCases = []struct {
	name string
	u    queue.ControlUpdate
}{
	{"no limits", queue.ControlUpdate{}},
	{"max_running = 1000000", queue.ControlUpdate{MaxRunning: ptr(1_000_000)}},
	{`rate_limit = "1000000/s"`, queue.ControlUpdate{Rate: &queue.RateLimit{N: 1_000_000, Per: time.Second}}},
}

// limits: the engine at 8 slots on a queue without limits and with each
// kind of limit, run after run.
func (b *runner) limits(ctx context.Context) ([]Result, error) {
	runs := make([][]float64, len(limitCases))
	for range b.cfg.Runs {
		for i, c := range limitCases {
			v, err := b.oneRun(ctx, func(ctx context.Context, dsn string) (float64, error) {
				st, err := b.cfg.Open(ctx, dsn)
				if err != nil {
					return 0, err
				}
				defer st.Close()
				if c.u.MaxRunning != nil || c.u.Rate != nil {
					u := c.u
					u.Names = []string{queue.DefaultQueue}
					if err := st.UpdateQueueControls(ctx, u); err != nil {
						return 0, err
					}
				}
				if err := AddJobs(ctx, st, b.cfg.EngineJobs, "noop"); err != nil {
					return 0, err
				}
				return b.engineRate(ctx, st, b.cfg.EngineJobs, 8)
			})
			if err != nil {
				return nil, err
			}
			runs[i] = append(runs[i], v)
		}
	}
	var out []Result
	for i, c := range limitCases[1:] {
		out = append(out, result("limits", "engine claim+complete, 8 slots, queue with "+c.name+" (never binds)",
			"jobs/s", runs[i+1], "the same queue without limits", median(runs[0]), "higher"))
	}
	return out, nil
}

func ptr[T any](v T) *T { return &v }

// ratelimit: rate_limit = "50/s" on a queue that four worker processes (4
// slots each) drain of shell jobs ("true"); it counts the starts within
// RateFor of the first one, against the limit's allowance for that time.
func (b *runner) ratelimit(ctx context.Context) ([]Result, error) {
	window := b.cfg.RateFor
	allowed := float64(rateLimit.N) * window.Seconds() / rateLimit.Per.Seconds()
	runs, err := b.repeat(ctx, func(ctx context.Context, dsn string) (float64, error) {
		st, err := b.cfg.Open(ctx, dsn)
		if err != nil {
			return 0, err
		}
		defer st.Close()
		rate := rateLimit
		if err := st.UpdateQueueControls(ctx, queue.ControlUpdate{Names: []string{queue.DefaultQueue}, Rate: &rate}); err != nil {
			return 0, err
		}
		// Enough work to outlast the window at the limit.
		if err := AddJobs(ctx, st, int(allowed*1.5)+rateLimit.N, "true"); err != nil {
			return 0, err
		}
		// Room for far more than the limit, so that the limit, not the
		// workers, sets the pace.
		if _, err := b.startWorkers(ctx, dsn, rateWorkers, "--concurrency", "4"); err != nil {
			return 0, err
		}
		defer b.stopWorkers(dsn)
		select {
		case <-time.After(window + 2*time.Second):
		case <-ctx.Done():
			return 0, ctx.Err()
		}
		return startsWithin(ctx, st, window)
	})
	if err != nil {
		return nil, err
	}
	return []Result{result("ratelimit", fmt.Sprintf("starts in %s under rate_limit = %q, %d worker processes × 4 slots", window, rateLimit, rateWorkers),
		"starts", runs, "the limit's allowance", allowed, "lower")}, nil
}

// startsWithin counts the jobs whose (latest) start lies within window of
// the first start.
func startsWithin(ctx context.Context, st queue.Store, window time.Duration) (float64, error) {
	jobs, err := st.ListJobs(ctx, queue.ListParams{})
	if err != nil {
		return 0, err
	}
	var starts []time.Time
	for _, j := range jobs {
		if !j.StartedAt.IsZero() {
			starts = append(starts, j.StartedAt)
		}
	}
	if len(starts) == 0 {
		return 0, fmt.Errorf("no job started")
	}
	sort.Slice(starts, func(a, b int) bool { return starts[a].Before(starts[b]) })
	n := 0
	for _, s := range starts {
		if s.Sub(starts[0]) < window {
			n++
		}
	}
	return float64(n), nil
}
