package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/queuectl/queuectl/queue"
)

// The enqueue-load scenario: how long one `queuectl enqueue` call takes
// while many worker processes keep the database's write lock busy and many
// other enqueuers compete for it.

// targetLoadP99 is the p99 of one enqueue call under load, in ms.
const targetLoadP99 = 100

// loadRatePerWorker sizes the backlog: more `true` jobs per worker and
// second than a worker runs, so the workers never run dry.
const loadRatePerWorker = 150

// enqueueLoad: LoadWorkers worker processes drain `true` jobs while
// LoadEnqueuers goroutines each run the real `queuectl enqueue` binary in a
// loop for LoadFor. One more goroutine runs `queuectl version` in a loop
// meanwhile: a process that starts like enqueue but touches no database,
// the baseline of what the machine's load alone costs a call. Calls that
// fail count with the time they took; each call's wait for the write lock
// comes from its own debug log line.
func (b *runner) enqueueLoad(ctx context.Context) ([]Result, error) {
	b.progress("enqueue-load: %d workers, %d enqueuers for %s", b.cfg.LoadWorkers, b.cfg.LoadEnqueuers, b.cfg.LoadFor)
	var calls, waits, base []float64
	var failures []error
	workersRate, err := b.underLoad(ctx, nil, func(dsn string) {
		calls, waits, failures, base = b.loadCalls(ctx, dsn, time.Now().Add(b.cfg.LoadFor))
	})
	if err != nil {
		return nil, err
	}
	if len(calls) == 0 || len(base) == 0 {
		return nil, fmt.Errorf("no call finished in %s (%d failed: %v)", b.cfg.LoadFor, len(failures), first(failures))
	}
	sort.Float64s(calls)
	sort.Float64s(base)
	sort.Float64s(waits)
	load := fmt.Sprintf("%d worker processes on true jobs, %d concurrent enqueuers", b.cfg.LoadWorkers, b.cfg.LoadEnqueuers)
	vs := "queuectl version under the same load"
	p50 := result("enqueue-load", "one queuectl enqueue call p50, "+load, "ms", []float64{percentile(calls, 0.5)}, vs+" (p50)", percentile(base, 0.5), "lower")
	p99 := result("enqueue-load", "one queuectl enqueue call p99, "+load, "ms", []float64{percentile(calls, 0.99)}, "target", targetLoadP99, "lower")
	p99.Note = fmt.Sprintf("%d calls; %s p99 %.1f ms", len(calls), vs, percentile(base, 0.99))
	mx := result("enqueue-load", "one queuectl enqueue call max, "+load, "ms", []float64{calls[len(calls)-1]}, vs+" (max)", base[len(base)-1], "lower")
	out := []Result{
		result("enqueue-load", "baseline: queuectl version p50 under the same load", "ms", []float64{percentile(base, 0.5)}, "", 0, "lower"),
		result("enqueue-load", "baseline: queuectl version p99 under the same load", "ms", []float64{percentile(base, 0.99)}, "", 0, "lower"),
		p50, p99, mx,
		result("enqueue-load", "one queuectl enqueue call's wait for the write lock p50", "ms", []float64{percentile(waits, 0.5)}, "", 0, "lower"),
		result("enqueue-load", "one queuectl enqueue call's wait for the write lock p99", "ms", []float64{percentile(waits, 0.99)}, "", 0, "lower"),
		result("enqueue-load", "one queuectl enqueue call's wait for the write lock max", "ms", []float64{last(waits)}, "", 0, "lower"),
		result("enqueue-load", "jobs the workers completed meanwhile", "jobs/s", []float64{workersRate}, "", 0, "higher"),
		result("enqueue-load", "enqueue calls that failed", "calls", []float64{float64(len(failures))}, "", 0, "lower"),
	}
	if len(failures) > 0 {
		out[len(out)-1].Note = "first: " + first(failures).Error()
	}
	return out, nil
}

// underLoad runs measure while LoadWorkers worker processes drain a
// backlog of `true` jobs from a scratch database, and returns how many
// jobs per second the workers completed meanwhile. prepare, when not nil,
// runs on the database before the workers start, and the cleanup it
// returns once they have stopped.
func (b *runner) underLoad(ctx context.Context, prepare func(dsn string) (func(), error), measure func(dsn string)) (float64, error) {
	dsn, st, done, err := b.scratch(ctx)
	if err != nil {
		return 0, err
	}
	defer done()
	backlog := int(float64(b.cfg.LoadWorkers*loadRatePerWorker) * b.cfg.LoadFor.Seconds())
	if err := AddJobs(ctx, st, backlog, "true"); err != nil {
		return 0, err
	}
	if prepare != nil {
		cleanup, err := prepare(dsn)
		if err != nil {
			return 0, err
		}
		defer cleanup()
	}
	if _, err := b.startWorkers(ctx, dsn, b.cfg.LoadWorkers); err != nil {
		return 0, err
	}
	defer b.stopWorkers(dsn)
	before, err := completed(ctx, st)
	if err != nil {
		return 0, err
	}
	start := time.Now()
	measure(dsn)
	elapsed := time.Since(start)
	after, err := completed(ctx, st)
	if err != nil {
		return 0, err
	}
	return float64(after-before) / elapsed.Seconds(), nil
}

// loadCalls runs the enqueuers and the baseline loop until deadline and
// returns the enqueue calls' and the baseline calls' wall times in ms.
func (b *runner) loadCalls(ctx context.Context, dsn string, deadline time.Time) (calls, waits []float64, failures []error, base []float64) {
	var mu sync.Mutex
	var wg sync.WaitGroup
	for g := range b.cfg.LoadEnqueuers {
		wg.Go(func() {
			for i := 0; time.Now().Before(deadline) && ctx.Err() == nil; i++ {
				t := time.Now()
				cmd := b.cli(ctx, dsn, "--log-level", "debug", "--log-format", "json", "enqueue", "--id", fmt.Sprintf("load-%d-%d", g, i), "--command", "true")
				ownSession(cmd)
				var stderr strings.Builder
				cmd.Stderr = &stderr
				_, err := cmd.Output()
				ms := float64(time.Since(t).Microseconds()) / 1000
				mu.Lock()
				calls = append(calls, ms) // a failed call was waited for too
				if err != nil {
					failures = append(failures, fmt.Errorf("queuectl enqueue: %v: %s", err, strings.TrimSpace(stderr.String())))
				} else {
					if w, ok := writeWait(stderr.String()); ok {
						waits = append(waits, w)
					}
				}
				mu.Unlock()
			}
		})
	}
	wg.Go(func() {
		for time.Now().Before(deadline) && ctx.Err() == nil {
			t := time.Now()
			cmd := b.cli(ctx, dsn, "version")
			ownSession(cmd)
			if err := cmd.Run(); err != nil {
				mu.Lock()
				failures = append(failures, err)
				mu.Unlock()
				continue
			}
			ms := float64(time.Since(t).Microseconds()) / 1000
			mu.Lock()
			base = append(base, ms)
			mu.Unlock()
		}
	})
	wg.Wait()
	return calls, waits, failures, base
}

// writeWait finds write_wait_ms in a command's JSON log lines (its
// "store write stats" line, logged at debug level).
func writeWait(log string) (float64, bool) {
	for _, line := range strings.Split(log, "\n") {
		var l struct {
			Message string   `json:"message"`
			Wait    *float64 `json:"write_wait_ms"`
		}
		if json.Unmarshal([]byte(line), &l) == nil && l.Wait != nil {
			return *l.Wait, true
		}
	}
	return 0, false
}

// completed counts the completed jobs.
func completed(ctx context.Context, st queue.Store) (int, error) {
	counts, err := st.CountJobs(ctx)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, c := range counts {
		if c.State == queue.StateCompleted {
			n += c.N
		}
	}
	return n, nil
}

func first(errs []error) error {
	if len(errs) == 0 {
		return nil
	}
	return errs[0]
}

func last(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	return xs[len(xs)-1]
}

// ownSession starts cmd in a session of its own, as the workers run (they
// detach) and as commands of other users, services or cron jobs would:
// with the kernel's autogroup scheduling each session gets an equal share
// of the CPU, so all the bench's calls in its own session would share one
// session's share against each worker's.
func ownSession(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
}
