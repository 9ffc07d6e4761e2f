package bench

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/queuectl/queuectl/internal/proc"
)

// The shell-job scenarios against a baseline that scales: N goroutines each
// starting `sh -c true` one after another (xargs has one forking process,
// which caps its rate as N grows), and what queuectl's own processes cost
// per job next to what the jobs' processes cost.

// spawnRate is the parallel-spawn baseline: loops goroutines, each running
// `sh -c true` with os/exec one after another, n in all; it returns jobs/s.
func spawnRate(ctx context.Context, n, loops int) (float64, error) {
	r, err := spawnLoops(ctx, n, loops)
	return r.rate, err
}

// spawnRun is one run of the parallel-spawn baseline: its rate, and the CPU
// per spawn of this process alone (user + system, ms), which is what
// starting and waiting for a child costs a parent that does nothing else:
// the floor under a worker's own CPU per shell job.
type spawnRun struct{ rate, own float64 }

func spawnLoops(ctx context.Context, n, loops int) (spawnRun, error) {
	var next atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, loops)
	cpu0 := selfCPU()
	start := time.Now()
	for range loops {
		wg.Go(func() {
			for next.Add(1) <= int64(n) {
				if err := exec.CommandContext(ctx, "sh", "-c", "true").Run(); err != nil {
					errs <- fmt.Errorf("sh -c true: %w", err)
					return
				}
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	own := selfCPU() - cpu0
	close(errs)
	if err := <-errs; err != nil {
		return spawnRun{}, err
	}
	return spawnRun{rate: float64(n) / elapsed.Seconds(), own: float64(own.Microseconds()) / 1000 / float64(n)}, nil
}

// selfCPU is this process's user + system CPU so far, without children.
func selfCPU() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// shellRun is one run of shell jobs through worker processes.
type shellRun struct {
	rate float64 // jobs/s, from starting the workers to the last completion
	// Per job, in ms, over the jobs completed between the workers' start
	// and the last completion: the worker processes' own CPU (user,
	// system), their jobs' processes' CPU, and the write lock held.
	user, sys, childUser, childSys, lock float64
	// lockCPU is the CPU time per job of the threads holding the write
	// lock while they held it (ms); txs the write transactions per job.
	lockCPU, txs float64
}

func (r shellRun) own() float64 { return r.user + r.sys }

// jobs is the CPU per job of the jobs' processes (ms).
func (r shellRun) jobs() float64 { return r.childUser + r.childSys }

// shellJobs runs the shell scenario's ShellJobs `true` jobs with procs
// worker processes of slots slots each.
func (b *runner) shellJobs(ctx context.Context, dsn string, procs, slots int) (shellRun, error) {
	n := b.cfg.ShellJobs
	st, err := b.cfg.Open(ctx, dsn)
	if err != nil {
		return shellRun{}, err
	}
	defer st.Close()
	if err := AddJobs(ctx, st, n, "true"); err != nil {
		return shellRun{}, err
	}
	start := time.Now()
	pids, err := b.startWorkers(ctx, dsn, procs, "--concurrency", strconv.Itoa(slots))
	if err != nil {
		return shellRun{}, err
	}
	stopped := false
	defer func() {
		if !stopped {
			b.stopWorkers(dsn)
		}
	}()
	// CPU from here on: the processes' start-up is not a per-job cost.
	cpu0, err := procCPU(pids)
	if err != nil {
		return shellRun{}, err
	}
	done0, err := completed(ctx, st)
	if err != nil {
		return shellRun{}, err
	}
	if err := waitCompleted(ctx, st, n, 10*time.Minute); err != nil {
		return shellRun{}, err
	}
	r := shellRun{rate: float64(n) / time.Since(start).Seconds()}
	cpu1, err := procCPU(pids)
	if err != nil {
		return shellRun{}, err
	}
	per := float64(n - done0)
	if per < 1 {
		per = 1
	}
	perJob := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) / per } // ms
	r.user = perJob(cpu1.user - cpu0.user)
	r.sys = perJob(cpu1.sys - cpu0.sys)
	r.childUser = perJob(cpu1.childUser - cpu0.childUser)
	r.childSys = perJob(cpu1.childSys - cpu0.childSys)
	b.stopWorkers(dsn)
	stopped = true
	wl, err := b.writeLockHeld(ctx, pids)
	if err != nil {
		return shellRun{}, err
	}
	r.lock, r.lockCPU, r.txs = wl.held/float64(n), wl.heldCPU/float64(n), float64(wl.txs)/float64(n)
	return r, nil
}

// cpuTimes are CPU times from /proc/PID/stat, summed over processes: their
// own (utime, stime, without children) and their children's that they
// waited for (cutime, cstime).
type cpuTimes struct{ user, sys, childUser, childSys time.Duration }

func (t cpuTimes) own() time.Duration { return t.user + t.sys }

// procCPU reads the processes' CPU times.
func procCPU(pids []int) (cpuTimes, error) {
	var t cpuTimes
	for _, pid := range pids {
		u, err := proc.ReadUsage(pid)
		if err != nil {
			return t, fmt.Errorf("worker %d: %w", pid, err)
		}
		t.user += u.User
		t.sys += u.System
		t.childUser += u.ChildUser
		t.childSys += u.ChildSystem
	}
	return t, nil
}

// writeLock is what worker processes logged of the write lock as they
// exited (their "process stats" lines), summed: the time it was held and
// the CPU time their threads ran holding it (ms; sqlite.WriteStats), and
// the transactions.
type writeLock struct {
	held, heldCPU float64
	txs           int64
}

// writeLockHeld sums the workers' "process stats" lines, logged as they
// exit; all zero if the store logs none (PostgreSQL).
func (b *runner) writeLockHeld(ctx context.Context, pids []int) (writeLock, error) {
	var total writeLock
	for _, pid := range pids {
		path := filepath.Join(b.tmp, "home", "logs", fmt.Sprintf("worker-%d.log", pid))
		deadline := time.Now().Add(30 * time.Second)
		for {
			st, found := lastProcessStats(path)
			if found && st.Held == nil {
				return writeLock{}, nil
			}
			if found {
				total.held += *st.Held
				total.heldCPU += st.HeldCPU
				total.txs += st.Transactions
				break
			}
			if time.Now().After(deadline) {
				return writeLock{}, fmt.Errorf("worker %d logged no process stats in 30s (%s)", pid, path)
			}
			select {
			case <-time.After(20 * time.Millisecond):
			case <-ctx.Done():
				return writeLock{}, ctx.Err()
			}
		}
	}
	return total, nil
}

// processStats are the write-lock fields of a "process stats" line;
// Held is nil where the store logs none.
type processStats struct {
	Message      string   `json:"message"`
	Held         *float64 `json:"write_lock_ms"`
	HeldCPU      float64  `json:"write_lock_cpu_ms"`
	Transactions int64    `json:"write_transactions"`
}

// lastProcessStats finds the "process stats" line of the last worker that
// wrote to a worker log. PIDs are reused (pid_max is often 32,768, and
// every shell job takes one), so a log may hold an earlier worker's
// lines: the line must follow the last "worker starting".
func lastProcessStats(path string) (st processStats, found bool) {
	f, err := os.Open(path)
	if err != nil {
		return st, false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		var l processStats
		if json.Unmarshal(sc.Bytes(), &l) != nil {
			continue
		}
		switch l.Message {
		case "worker starting":
			st, found = processStats{}, false
		case "process stats":
			st, found = l, true
		}
	}
	return st, found
}

// spawnSlots are the parallelisms the spawn scenario measures: 1 and 2,
// and 4, 8 and 16 where the machine has that many cores.
func spawnSlots() []int {
	out := []int{1, 2}
	for _, n := range []int{4, 8, 16} {
		if runtime.NumCPU() >= n {
			out = append(out, n)
		}
	}
	return out
}

// spawn: at each parallelism N, the parallel-spawn baseline, xargs -P N,
// and queuectl's shell jobs with N worker processes and with one worker
// process of N slots, run after run.
func (b *runner) spawn(ctx context.Context) ([]Result, error) {
	var out []Result
	for _, n := range spawnSlots() {
		var base, xargs, procs, slots []float64
		for range b.cfg.Runs {
			s, err := spawnRate(ctx, b.cfg.ShellJobs, n)
			if err != nil {
				return nil, err
			}
			x, err := xargsRate(ctx, b.cfg.ShellJobs, n)
			if err != nil {
				return nil, err
			}
			base, xargs = append(base, s), append(xargs, x)
			for _, mode := range []struct {
				procs, slots int
				into         *[]float64
			}{{n, 1, &procs}, {1, n, &slots}} {
				r, err := b.oneShellRun(ctx, mode.procs, mode.slots)
				if err != nil {
					return nil, err
				}
				*mode.into = append(*mode.into, r.rate)
			}
		}
		vs := fmt.Sprintf("parallel spawn, %d loop(s)", n)
		out = append(out,
			result("spawn", fmt.Sprintf("baseline: parallel spawn, %d loop(s) of sh -c true (os/exec)", n), "jobs/s", base, "", 0, "higher"),
			result("spawn", fmt.Sprintf("baseline: xargs -P %d sh -c true", n), "jobs/s", xargs, vs, median(base), "higher"),
			result("spawn", fmt.Sprintf("shell jobs (true), %d worker process(es) (worker start --count %d)", n, n), "jobs/s", procs, vs, median(base), "higher"),
			result("spawn", fmt.Sprintf("shell jobs (true), one worker process with %d slot(s) (--concurrency %d)", n, n), "jobs/s", slots, vs, median(base), "higher"),
		)
	}
	return out, nil
}

// oneShellRun is shellJobs on a fresh database.
func (b *runner) oneShellRun(ctx context.Context, procs, slots int) (shellRun, error) {
	dsn, cleanup, err := b.cfg.NewDB(ctx)
	if err != nil {
		return shellRun{}, err
	}
	defer cleanup()
	return b.shellJobs(ctx, dsn, procs, slots)
}

// medianOf is the median of one figure over runs.
func medianOf(runs []shellRun, f func(shellRun) float64) float64 {
	xs := make([]float64, len(runs))
	for i, r := range runs {
		xs[i] = f(r)
	}
	return median(xs)
}

func figure(runs []shellRun, f func(shellRun) float64) []float64 {
	xs := make([]float64, len(runs))
	for i, r := range runs {
		xs[i] = f(r)
	}
	return xs
}

// cpu: what one shell job costs with Workers worker processes: the
// workers' own CPU (user and system apart), their jobs' processes' CPU, and
// the time the write lock is held; and the rates they project: the write
// lock allows at most 1 / (lock time per job) jobs a second however many
// cores there are, and each core runs at most 1 / (CPU per job).
//
// The lock time counts the time a holder waited for a core, as it does on
// this machine's few cores busy with shells; the holder's own CPU while it
// held the lock is the least a transaction holds it on cores like these,
// so 1 / (that per job) bounds the ceiling from above. A host with many
// cores runs many slots, whose claims and outcomes are batched many to a
// transaction, so the same figures are also taken with one worker process
// of wideSlots slots.
func (b *runner) cpu(ctx context.Context) ([]Result, error) {
	var runs, wide []shellRun
	var floor []float64
	for range b.cfg.Runs {
		r, err := b.oneShellRun(ctx, b.cfg.Workers, 1)
		if err != nil {
			return nil, err
		}
		sp, err := spawnLoops(ctx, b.cfg.ShellJobs, b.cfg.Workers)
		if err != nil {
			return nil, err
		}
		runs, floor = append(runs, r), append(floor, sp.own)
		if r.lock > 0 { // the wide run reports the write lock alone: none on PostgreSQL
			wr, err := b.oneShellRun(ctx, 1, wideSlots)
			if err != nil {
				return nil, err
			}
			wide = append(wide, wr)
		}
	}
	w := fmt.Sprintf(", %d worker processes", b.cfg.Workers)
	own := figure(runs, shellRun.own)
	out := []Result{
		result("cpu", "queuectl's own CPU per job, user"+w, "ms", figure(runs, func(r shellRun) float64 { return r.user }), "", 0, "lower"),
		result("cpu", "queuectl's own CPU per job, system"+w, "ms", figure(runs, func(r shellRun) float64 { return r.sys }), "", 0, "lower"),
		result("cpu", fmt.Sprintf("baseline: a parent's own CPU per spawn, %d loops of sh -c true (os/exec)", b.cfg.Workers), "ms", floor, "", 0, "lower"),
		result("cpu", "queuectl's own CPU per job (user + system)"+w, "ms", own, "a parent's CPU per spawn", median(floor), "lower"),
		result("cpu", "the job's processes' CPU per job (sh -c true), user"+w, "ms", figure(runs, func(r shellRun) float64 { return r.childUser }), "", 0, "lower"),
		result("cpu", "the job's processes' CPU per job (sh -c true), system"+w, "ms", figure(runs, func(r shellRun) float64 { return r.childSys }), "", 0, "lower"),
	}
	if lock := figure(runs, func(r shellRun) float64 { return r.lock }); median(lock) > 0 {
		out = append(out,
			result("cpu", "SQLite write lock held per job"+w, "ms", lock, "", 0, "lower"),
			result("cpu", "projected ceiling on any number of cores: 1 / write-lock time per job", "jobs/s", inverse(lock), "", 0, "higher"))
		ww := fmt.Sprintf(", one worker process with %d slots", wideSlots)
		out = append(out, lockCPUResults(runs, w)...)
		out = append(out, lockCPUResults(wide, ww)...)
		out = append(out,
			result("cpu", "SQLite write lock held per job"+ww, "ms", figure(wide, func(r shellRun) float64 { return r.lock }), "", 0, "lower"),
			result("cpu", "measured rate of these runs"+ww, "jobs/s", figure(wide, func(r shellRun) float64 { return r.rate }), "", 0, "higher"))
	}
	all := figure(runs, func(r shellRun) float64 { return r.own() + r.jobs() })
	perCore := result("cpu", "CPU-bound rate per core: 1 / (own + the job's CPU per job)", "jobs/s", inverse(all), "", 0, "higher")
	perCore.Note = fmt.Sprintf("queuectl alone (1 / own CPU per job): %.0f jobs/s per core; this machine has %d", median(inverse(own)), runtime.NumCPU())
	rate := result("cpu", "measured rate of these runs"+w, "jobs/s", figure(runs, func(r shellRun) float64 { return r.rate }), "", 0, "higher")
	return append(out, perCore, rate), nil
}

// wideSlots are the slots of the cpu scenario's one worker process
// standing for a host with many cores.
const wideSlots = 64

// lockCPUResults are the write lock's figures from the holders' CPU for
// runs (how is what names them): per job, transactions per job, and the
// upper bound they set on the ceiling.
func lockCPUResults(runs []shellRun, how string) []Result {
	cpu := figure(runs, func(r shellRun) float64 { return r.lockCPU })
	if median(cpu) <= 0 {
		return nil // not measured on this system
	}
	return []Result{
		result("cpu", "write transactions per job"+how, "transactions", figure(runs, func(r shellRun) float64 { return r.txs }), "", 0, "lower"),
		result("cpu", "SQLite write lock held per job, the holder's CPU"+how, "ms", cpu, "", 0, "lower"),
		result("cpu", "upper bound of the ceiling: 1 / the holder's CPU per job"+how, "jobs/s", inverse(cpu), "", 0, "higher"),
	}
}

// inverse turns ms per job into jobs per second.
func inverse(ms []float64) []float64 {
	out := make([]float64, len(ms))
	for i, v := range ms {
		if v > 0 {
			out[i] = 1000 / v
		}
	}
	return out
}

// scalingCounts are the worker counts of the scaling scenario.
var scalingCounts = []int{1, 2, 4, 8}

// scaling: shell jobs with N worker processes and with one process of N
// slots, N = 1, 2, 4, 8: the rate and queuectl's own CPU per job, against
// the same at N = 1, to show whether more processes cost more per job.
func (b *runner) scaling(ctx context.Context) ([]Result, error) {
	type mode struct {
		name string
		run  func(n int) (procs, slots int)
	}
	modes := []mode{
		{"worker processes (worker start --count N)", func(n int) (int, int) { return n, 1 }},
		{"slots of one worker process (--concurrency N)", func(n int) (int, int) { return 1, n }},
	}
	runs := make([][][]shellRun, len(modes))
	for m := range modes {
		runs[m] = make([][]shellRun, len(scalingCounts))
	}
	for range b.cfg.Runs {
		for i, n := range scalingCounts {
			for m, md := range modes {
				procs, slots := md.run(n)
				r, err := b.oneShellRun(ctx, procs, slots)
				if err != nil {
					return nil, err
				}
				runs[m][i] = append(runs[m][i], r)
			}
		}
	}
	var out []Result
	for m, md := range modes {
		rate1 := medianOf(runs[m][0], func(r shellRun) float64 { return r.rate })
		proj1 := medianOf(runs[m][0], func(r shellRun) float64 { return r.onCores(1) })
		own1 := medianOf(runs[m][0], shellRun.own)
		jobs1 := medianOf(runs[m][0], shellRun.jobs)
		for i, n := range scalingCounts {
			rs := runs[m][i]
			at := fmt.Sprintf(", %d %s", n, md.name)
			own := result("scaling", "queuectl's own CPU per job (user + system)"+at, "ms", figure(rs, shellRun.own), "the same at N = 1", own1, "lower")
			own.Note = fmt.Sprintf("user %.3f, system %.3f ms; write lock held %.3f ms, its holder's CPU %.3f ms",
				medianOf(rs, func(r shellRun) float64 { return r.user }), medianOf(rs, func(r shellRun) float64 { return r.sys }),
				medianOf(rs, func(r shellRun) float64 { return r.lock }),
				medianOf(rs, func(r shellRun) float64 { return r.lockCPU }))
			// The same `sh -c true` at N = 1 and N: what running N
			// things at once does to the CPU one unit of identical,
			// unshared work takes on this machine, the control for
			// queuectl's own ratio.
			jobs := result("scaling", "the job's processes' CPU per job (sh -c true)"+at, "ms", figure(rs, shellRun.jobs), "the same at N = 1", jobs1, "lower")
			out = append(out,
				result("scaling", "shell jobs (true)"+at, "jobs/s", figure(rs, func(r shellRun) float64 { return r.rate }), "the same at N = 1", rate1, "higher"),
				own, jobs)
			if proj := figure(rs, func(r shellRun) float64 { return r.onCores(n) }); median(proj) > 0 {
				out = append(out, result("scaling", fmt.Sprintf("projected rate on %d cores", n)+at, "jobs/s", proj, "the same at N = 1", proj1, "higher"))
			}
		}
	}
	return out, nil
}

// onCores projects this run's rate on a machine of n cores, one for each
// worker process or slot: the least of n cores over the CPU a job costs
// (queuectl's and the job's own) and the write lock's ceiling, one over
// its holder's CPU per job (0 where the store does not time it). The
// costs are this run's, taken with every process on this machine's
// cores; which way they would move on n cores is not known
// (docs/benchmarks.md, "scaling").
func (r shellRun) onCores(n int) float64 {
	cpu := r.own() + r.jobs()
	if r.lockCPU <= 0 || cpu <= 0 {
		return 0
	}
	return min(float64(n)*1000/cpu, 1000/r.lockCPU)
}
