package bench

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/queuectl/queuectl/queue"
)

// Targets from the benchmark issue, on a 2-core machine.
const (
	targetEnqueueRate  = 100_000 // jobs/s, batch enqueue
	targetEngineRate   = 20_000  // claim+complete per second, no-op executor
	targetShellVsXargs = 0.85    // shell jobs end to end, ratio to xargs -P
	targetLatencyP50   = 10      // ms, enqueue to start
	targetLatencyP99   = 50      // ms
	targetEnqueueCall  = 10      // ms, one queuectl enqueue process
	targetIdleCPU      = 1.0     // % of one core, all idle workers together
	targetIdleRSS      = 30      // MiB, one idle worker
	targetScaleRatio   = 1 / 1.5 // large-table claim rate / empty-table rate
)

// enqueue: `queuectl enqueue --file` of JSON Lines, one transaction.
func (b *runner) enqueue(ctx context.Context) ([]Result, error) {
	path := filepath.Join(b.tmp, "jobs.jsonl")
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	w := bufio.NewWriter(f)
	for i := range b.cfg.EnqueueJobs {
		fmt.Fprintf(w, `{"id":"e%d","command":"true","queue":"bench","priority":%d}`+"\n", i, i%10)
	}
	if err := w.Flush(); err != nil {
		return nil, err
	}
	f.Close()
	runs, err := b.repeat(ctx, func(ctx context.Context, dsn string) (float64, error) {
		if _, err := b.cliOK(ctx, dsn, "migrate"); err != nil { // schema first: not part of the figure
			return 0, err
		}
		start := time.Now()
		out, err := b.cliOK(ctx, dsn, "enqueue", "--file", path)
		if err != nil {
			return 0, err
		}
		elapsed := time.Since(start)
		if n := strings.Count(out, "\n"); n != b.cfg.EnqueueJobs {
			return 0, fmt.Errorf("enqueued %d jobs, want %d", n, b.cfg.EnqueueJobs)
		}
		return float64(b.cfg.EnqueueJobs) / elapsed.Seconds(), nil
	})
	if err != nil {
		return nil, err
	}
	return []Result{result("enqueue", fmt.Sprintf("batch enqueue of %d jobs (enqueue --file)", b.cfg.EnqueueJobs),
		"jobs/s", runs, "target", targetEnqueueRate, "higher")}, nil
}

// engineRate runs n pre-inserted no-op jobs through an in-process engine
// with the given slots and returns claim+complete cycles per second.
func (b *runner) engineRate(ctx context.Context, st queue.Store, n, slots int) (float64, error) {
	run, err := RunNoopEngine(ctx, st, n, slots)
	if err != nil {
		return 0, err
	}
	return float64(n) / run.Elapsed.Seconds(), nil
}

// emptyTableRate is the engine rate with slots on the database dsn, empty
// but for n pending no-op jobs.
func (b *runner) emptyTableRate(ctx context.Context, dsn string, n, slots int) (float64, error) {
	st, err := b.cfg.Open(ctx, dsn)
	if err != nil {
		return 0, err
	}
	defer st.Close()
	if err := AddJobs(ctx, st, n, "noop"); err != nil {
		return 0, err
	}
	return b.engineRate(ctx, st, n, slots)
}

// engine: claim+complete cycles with a no-op executor at 1, 8, 64 slots.
func (b *runner) engine(ctx context.Context) ([]Result, error) {
	var out []Result
	for _, slots := range []int{1, 8, 64} {
		runs, err := b.repeat(ctx, func(ctx context.Context, dsn string) (float64, error) {
			return b.emptyTableRate(ctx, dsn, b.cfg.EngineJobs, slots)
		})
		if err != nil {
			return nil, err
		}
		out = append(out, result("engine", fmt.Sprintf("engine claim+complete, no-op executor, %d slot(s)", slots),
			"jobs/s", runs, "target", targetEngineRate, "higher"))
	}
	return out, nil
}

// startWorkers starts n detached worker processes (with more worker start
// flags in extra) and returns their pids.
func (b *runner) startWorkers(ctx context.Context, dsn string, n int, extra ...string) ([]int, error) {
	out, err := b.cliOK(ctx, dsn, append([]string{"worker", "start", "--count", strconv.Itoa(n)}, extra...)...)
	if err != nil {
		return nil, err
	}
	var pids []int
	for _, f := range strings.Fields(out) {
		pid, err := strconv.Atoi(f)
		if err != nil {
			return nil, fmt.Errorf("worker start printed %q", out)
		}
		pids = append(pids, pid)
	}
	return pids, nil
}

func (b *runner) stopWorkers(dsn string) {
	b.cliOK(context.Background(), dsn, "worker", "stop", "--timeout", "5s")
}

// waitCompleted polls until n jobs are completed.
func waitCompleted(ctx context.Context, st queue.Store, n int, limit time.Duration) error {
	deadline := time.Now().Add(limit)
	for {
		counts, err := st.CountJobs(ctx)
		if err != nil {
			return err
		}
		done, failed := 0, 0
		for _, c := range counts {
			switch c.State {
			case queue.StateCompleted:
				done += c.N
			case queue.StateFailed, queue.StateDead:
				failed += c.N
			}
		}
		if failed > 0 {
			return fmt.Errorf("%d jobs failed", failed)
		}
		if done >= n {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%d of %d jobs completed after %s", done, n, limit)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// shell: `true` jobs end to end with N worker processes, against
// `xargs -P N sh -c true` over the same count and against N goroutines
// spawning `sh -c true` (the parallel-spawn baseline), both run next to
// each of queuectl's runs.
func (b *runner) shell(ctx context.Context) ([]Result, error) {
	n, w := b.cfg.ShellJobs, b.cfg.Workers
	var xargsRuns, spawnRuns []float64
	runs, err := b.repeat(ctx, func(ctx context.Context, dsn string) (float64, error) {
		x, err := xargsRate(ctx, n, w)
		if err != nil {
			return 0, err
		}
		sp, err := spawnRate(ctx, n, w)
		if err != nil {
			return 0, err
		}
		xargsRuns, spawnRuns = append(xargsRuns, x), append(spawnRuns, sp)
		r, err := b.shellJobs(ctx, dsn, w, 1)
		return r.rate, err
	})
	if err != nil {
		return nil, err
	}
	x, sp := median(xargsRuns), median(spawnRuns)
	name := fmt.Sprintf("shell jobs (true) end to end, %d worker processes", w)
	r := result("shell", name, "jobs/s", runs, fmt.Sprintf("xargs -P %d", w), x, "higher")
	r.Note = fmt.Sprintf("xargs -P %d: %.0f jobs/s; target ratio %.2f (includes worker start-up)", w, x, targetShellVsXargs)
	rs := result("shell", name+", against parallel spawn", "jobs/s", runs, fmt.Sprintf("parallel spawn, %d loops", w), sp, "higher")
	base := result("shell", fmt.Sprintf("baseline: xargs -P %d sh -c true", w), "jobs/s", xargsRuns, "", 0, "higher")
	spawn := result("shell", fmt.Sprintf("baseline: parallel spawn, %d loops of sh -c true (os/exec)", w), "jobs/s", spawnRuns, "", 0, "higher")
	return []Result{base, spawn, r, rs}, nil
}

// xargsRate is the physical limit for shell jobs: xargs running
// `sh -c true` n times, p at a time.
func xargsRate(ctx context.Context, n, p int) (float64, error) {
	cmd := exec.CommandContext(ctx, "xargs", "-P", strconv.Itoa(p), "-n", "1", "sh", "-c", "true")
	input := strings.Repeat("x\n", n)
	cmd.Stdin = strings.NewReader(input)
	start := time.Now()
	if err := cmd.Run(); err != nil {
		return 0, fmt.Errorf("xargs: %w", err)
	}
	return float64(n) / time.Since(start).Seconds(), nil
}

// latency: enqueue-to-start with idle workers, the enqueue coming from a
// separate process; and the wall time of one `queuectl enqueue` process.
func (b *runner) latency(ctx context.Context) ([]Result, error) {
	dsn, st, done, err := b.scratch(ctx)
	if err != nil {
		return nil, err
	}
	defer done()
	if _, err := b.startWorkers(ctx, dsn, 2); err != nil {
		return nil, err
	}
	defer b.stopWorkers(dsn)
	time.Sleep(500 * time.Millisecond) // let the workers settle into idle
	var lat, call []float64
	for i := range b.cfg.LatencySamples {
		id := fmt.Sprintf("lat%d", i)
		start := time.Now()
		if _, err := b.cliOK(ctx, dsn, "enqueue", "--id", id, "--command", "true"); err != nil {
			return nil, err
		}
		call = append(call, float64(time.Since(start).Microseconds())/1000)
		deadline := time.Now().Add(10 * time.Second)
		for {
			j, err := st.GetJob(ctx, id)
			if err != nil {
				return nil, err
			}
			if j.State == queue.StateCompleted {
				lat = append(lat, float64(j.StartedAt.Sub(j.CreatedAt).Microseconds())/1000)
				break
			}
			if time.Now().After(deadline) {
				return nil, fmt.Errorf("job %s did not complete within 10s", id)
			}
			time.Sleep(2 * time.Millisecond)
		}
	}
	sort.Float64s(lat)
	p50, p99 := percentile(lat, 0.5), percentile(lat, 0.99)
	return []Result{
		result("latency", "enqueue-to-start p50, idle workers", "ms", []float64{p50}, "target", targetLatencyP50, "lower"),
		result("latency", "enqueue-to-start p99, idle workers", "ms", []float64{p99}, "target", targetLatencyP99, "lower"),
		result("latency", "one queuectl enqueue call, process start to exit (median)", "ms", call, "target", targetEnqueueCall, "lower"),
	}, nil
}

// idle: CPU of idle workers over IdleFor, and an idle worker's memory.
func (b *runner) idle(ctx context.Context) ([]Result, error) {
	dsn, cleanup, err := b.cfg.NewDB(ctx)
	if err != nil {
		return nil, err
	}
	defer cleanup()
	pids, err := b.startWorkers(ctx, dsn, b.cfg.IdleWorkers)
	if err != nil {
		return nil, err
	}
	defer b.stopWorkers(dsn)
	time.Sleep(time.Second)
	before, err := procCPU(pids)
	if err != nil {
		return nil, err
	}
	start := time.Now()
	select {
	case <-time.After(b.cfg.IdleFor):
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	after, err := procCPU(pids)
	if err != nil {
		return nil, err
	}
	cpu := (after.own() - before.own()).Seconds() / time.Since(start).Seconds() * 100
	rss, err := rssMiB(pids[0])
	if err != nil {
		return nil, err
	}
	r := result("idle", fmt.Sprintf("CPU of %d idle workers together over %s", len(pids), b.cfg.IdleFor), "% of one core",
		[]float64{cpu}, "target", targetIdleCPU, "lower")
	m := result("idle", "resident memory of one idle worker", "MiB", []float64{rss}, "target", targetIdleRSS, "lower")
	return []Result{r, m}, nil
}

func rssMiB(pid int) (float64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, _ := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 64)
			return kb / 1024, nil
		}
	}
	return 0, fmt.Errorf("no VmRSS for %d", pid)
}

// scale: engine rate at 8 slots with many finished and pending jobs in the
// table, against the empty-table rate; database size per million finished.
func (b *runner) scale(ctx context.Context) ([]Result, error) {
	dsn, st, done, err := b.scratch(ctx)
	if err != nil {
		return nil, err
	}
	defer done()
	b.progress("scale: creating %d finished jobs", b.cfg.ScaleFinished)
	if err := finishMany(ctx, st, b.cfg.ScaleFinished); err != nil {
		return nil, err
	}
	size, err := b.cfg.Size(ctx, st, dsn)
	if err != nil {
		return nil, err
	}
	b.progress("scale: adding %d pending jobs", b.cfg.ScalePending)
	if err := AddJobs(ctx, st, b.cfg.ScalePending, "noop"); err != nil {
		return nil, err
	}
	if err := tidy(ctx, st); err != nil {
		return nil, err
	}
	n := min(b.cfg.EngineJobs, b.cfg.ScalePending)
	// Each large-table run follows an empty-table run of the same size on
	// a fresh database: the ratio compares rates taken a moment apart, not
	// minutes apart on a machine whose speed drifts.
	var runs, empty []float64
	for range b.cfg.Runs {
		base, err := b.oneRun(ctx, func(ctx context.Context, dsn string) (float64, error) {
			return b.emptyTableRate(ctx, dsn, n, 8)
		})
		if err != nil {
			return nil, err
		}
		rate, err := b.engineRate(ctx, st, n, 8)
		if err != nil {
			return nil, err
		}
		empty, runs = append(empty, base), append(runs, rate)
	}
	r := result("scale", fmt.Sprintf("engine rate, 8 slots, with %d finished and %d pending jobs", b.cfg.ScaleFinished, b.cfg.ScalePending),
		"jobs/s", runs, "empty table, each run next to one", median(empty), "higher")
	r.Need = targetScaleRatio
	r.Note = fmt.Sprintf("target ratio at least %.2f (within 1.5x of the empty-table rate)", targetScaleRatio)
	out := []Result{r, result("scale-baseline", "empty-table engine rate, 8 slots, each run just before a large-table run",
		"jobs/s", empty, "", 0, "higher")}
	if size > 0 {
		perMillion := float64(size) / float64(b.cfg.ScaleFinished) * 1e6 / (1 << 20)
		out = append(out, result("scale", "database size per million finished jobs", "MiB", []float64{perMillion}, "", 0, "lower"))
	}
	return out, nil
}

// tidyEvery is how many jobs finishMany finishes between two rounds of a
// store's Tidy: about what workers finish between two of their rounds
// (every 15 s) at 3,000 jobs/s.
const tidyEvery = 50_000

// tidy runs a round of st's Tidy, if it has one, as running workers would.
func tidy(ctx context.Context, st queue.Store) error {
	if t, ok := st.(queue.Tidier); ok {
		if _, err := t.Tidy(ctx); err != nil {
			return err
		}
	}
	return nil
}

// finishMany creates n completed jobs through the store: insert, claim and
// finish in batches (with a history row each, as real jobs have), with a
// round of the store's Tidy now and then, as workers do.
func finishMany(ctx context.Context, st queue.Store, n int) error {
	const batch = 5_000
	for done := 0; done < n; {
		k := min(batch, n-done)
		now := time.Now().UTC()
		jobs, err := newJobs(k, "true", now)
		if err != nil {
			return err
		}
		if err := st.InsertJobs(ctx, jobs); err != nil {
			return err
		}
		claimed, err := st.ClaimJobs(ctx, queue.ClaimParams{Worker: "bench", Limit: k, Now: now.Add(time.Second), LeaseUntil: now.Add(time.Hour)})
		if err != nil {
			return err
		}
		fs := make([]queue.Finish, len(claimed))
		code := 0
		for i, j := range claimed {
			fs[i] = queue.RetryPolicy{}.Decide(j, "bench", queue.End{Outcome: queue.OutcomeSucceeded, ExitCode: &code, Started: now, Finished: now}, now)
		}
		if _, err := st.FinishJobs(ctx, fs); err != nil {
			return err
		}
		done += len(claimed)
		if done%tidyEvery < batch || done == n {
			if err := tidy(ctx, st); err != nil {
				return err
			}
		}
	}
	return nil
}

// scratch makes a fresh database and opens a store on it; done closes the
// store and removes the database.
func (b *runner) scratch(ctx context.Context) (string, queue.Store, func(), error) {
	dsn, cleanup, err := b.cfg.NewDB(ctx)
	if err != nil {
		return "", nil, nil, err
	}
	st, err := b.cfg.Open(ctx, dsn)
	if err != nil {
		cleanup()
		return "", nil, nil, err
	}
	return dsn, st, func() { st.Close(); cleanup() }, nil
}
