// Package executor runs one shell command in its own process group: it starts
// "sh -c SCRIPT" (or another configured shell), captures its combined output
// with a size cap, enforces a timeout, honours context cancellation, and makes
// sure no process of the command's group outlives Run. It knows nothing about
// queues, jobs or retries; it reports what happened in a Result.
//
// # Process groups and stopping
//
// The shell is started as the leader of a new process group (Setpgid), whose
// id equals the shell's pid; every process it starts stays in that group
// unless it deliberately leaves it. On timeout or context cancellation the
// whole group gets SIGTERM (followed by SIGCONT, so stopped members see it),
// and SIGKILL once Config.KillGrace has passed if anything in the group is
// still alive (or a shorter grace that the context's cause asks for, see
// KillGracer). Run returns as soon as the group is empty.
//
// When the shell exits on its own, any members of its group that are still
// running (for example "sleep 60 &" left in the background, possibly holding
// the output pipe open) are killed with SIGKILL, as job runners usually do,
// and Result.KilledLeftovers is set. A job that wants to leave a daemon
// behind must start it outside the group (setsid) and redirect its output.
// So, when Run returns, no process of the group is left running.
//
// Group signals never hit an unrelated process: when the command is stopped,
// the shell is not reaped (on Linux) until the group has been signalled, and
// while it is an unreaped zombie its pid, and so the group id, cannot be
// reused; after a normal exit the shell is reaped first and the group is
// probed with signal 0, and a group id is never reused while any process is
// left in the group. An empty group, the common case, costs no scan of /proc.
//
// On Linux the wait for the shell's exit is parked on the runtime's poller
// through a pidfd (kernel 5.4 and later; older kernels fall back to a
// blocking waitid), so a worker running 64 long jobs holds a handful of OS
// threads, not one per job.
//
// # Output
//
// Stdout and stderr share one pipe, so their lines interleave in the order
// they were written. At most Config.OutputLimit bytes are kept: the first
// half and the last half, with a marker line reporting how many bytes were
// dropped in between. Capturing never blocks the command.
//
// A process that left the group (setsid) but still holds the output pipe
// cannot delay Run by more than Config.WaitDelay after the group is gone: the
// pipe is then closed on our side and such a process gets SIGPIPE/EPIPE on
// its next write.
//
// # Caveats
//
// This relies on Unix process groups and is meant for Linux; on other Unix
// systems it works, but the shell is reaped before leftovers are killed, so a
// pid reuse in between could in theory misdirect a signal, and group liveness
// counts zombies. Processes that escape the group (setsid, setpgid, double
// fork into a new session) are not tracked. Processes in uninterruptible
// sleep may outlive a SIGKILL for a while.
package executor

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"slices"
	"sync"
	"syscall"
	"time"

	"github.com/queuectl/queuectl/internal/proc"
)

// Defaults applied by New for zero Config fields.
const (
	DefaultKillGrace   = 5 * time.Second
	DefaultOutputLimit = 1 << 20
	DefaultWaitDelay   = 2 * time.Second
)

// DefaultShell is the shell used when Config.Shell is empty.
func DefaultShell() []string { return []string{"/bin/sh", "-c"} }

// Config configures an Executor. Zero fields take their defaults.
type Config struct {
	Shell       []string      // default []string{"/bin/sh", "-c"}
	KillGrace   time.Duration // SIGTERM -> SIGKILL grace on timeout/cancel; default 5s
	OutputLimit int64         // cap of captured output per run; default 1 MiB (1<<20)
	// WaitDelay bounds how long Run waits, once the process group has been
	// killed or has exited, for the output pipe to be closed by processes
	// that escaped the group; default 2s.
	WaitDelay time.Duration
}

// Command is one shell command to run.
type Command struct {
	Script  string         // passed as the argument after Shell
	Env     []string       // extra "K=V" entries appended to os.Environ(); later entries win
	Dir     string         // working directory, "" = inherit
	Timeout time.Duration  // 0 = none
	OnStart func(pgid int) // called once, after the process (group leader) started, before waiting
	// Live, when set, is called once after the process started with a
	// function that returns the output kept so far (as Result.Output would
	// hold it now) and how many bytes the command has written in all. That
	// function may be called from any goroutine, also after Run returned.
	Live func(read func() (output []byte, written int64))
}

// Result describes one finished run.
type Result struct {
	ExitCode int       // exit status; -1 if killed by a signal or never started
	Signal   string    // e.g. "SIGKILL", "SIGTERM"; "" if it exited normally
	TimedOut bool      // the Timeout fired and we stopped the group
	Canceled bool      // ctx was cancelled and we stopped the group (or it was done before start)
	StartErr error     // the process could not be started (shell missing, bad Dir); ExitCode -1
	Output   []byte    // combined stdout+stderr (one pipe, interleaved), capped
	Dropped  int64     // bytes dropped by the cap (0 if none)
	Started  time.Time // UTC
	Finished time.Time // UTC; Started plus the run time on the monotonic clock

	// PID is the shell's pid, which is also the process group id; 0 if the
	// process never started.
	PID int
	// KilledLeftovers reports that the shell exited on its own but other
	// processes of its group were still running and were SIGKILLed.
	KilledLeftovers bool
}

// Executor runs commands. It holds its configuration and the null device
// its commands read, and is safe for concurrent use.
type Executor struct {
	cfg Config

	nullOnce sync.Once
	null     *os.File // /dev/null, opened once for every command's stdin; nil if it would not open
}

// New returns an Executor with cfg's zero fields set to their defaults.
func New(cfg Config) *Executor {
	if len(cfg.Shell) == 0 {
		cfg.Shell = DefaultShell()
	} else {
		cfg.Shell = slices.Clone(cfg.Shell)
	}
	if cfg.KillGrace <= 0 {
		cfg.KillGrace = DefaultKillGrace
	}
	if cfg.OutputLimit <= 0 {
		cfg.OutputLimit = DefaultOutputLimit
	}
	if cfg.WaitDelay <= 0 {
		cfg.WaitDelay = DefaultWaitDelay
	}
	return &Executor{cfg: cfg}
}

// Config returns the effective configuration (defaults applied).
func (e *Executor) Config() Config {
	cfg := e.cfg
	cfg.Shell = slices.Clone(cfg.Shell)
	return cfg
}

// Run runs c to completion and reports the outcome. The command's stdin is
// /dev/null. It does not return before
// the shell has exited and its process group has been emptied (see the
// package documentation); stopping on timeout or cancellation takes at most
// about KillGrace. If ctx is already done, nothing is started and the Result
// has Canceled set and StartErr wrapping ctx.Err().
func (e *Executor) Run(ctx context.Context, c Command) Result {
	began := time.Now() // monotonic: the run time is measured on this host alone
	res := Result{ExitCode: -1, Started: began.UTC()}
	cmd, pr, pidfd, err := e.start(ctx, c, &res)
	if err != nil {
		res.StartErr = err
		res.Finished = res.Started.Add(time.Since(began))
		return res
	}
	defer pr.Close()
	pgid := cmd.Process.Pid
	res.PID = pgid
	out, copied := readOutput(pr, e.cfg.OutputLimit)

	// exited delivers once the shell has exited; the value reports whether
	// it has already been reaped (only on platforms or in error paths where
	// waiting without reaping is impossible).
	exited := make(chan bool, 1)
	go func() { exited <- waitExit(cmd, pidfd) }()

	var timeout <-chan time.Time
	if c.Timeout > 0 {
		t := time.NewTimer(c.Timeout)
		defer t.Stop()
		timeout = t.C
	}
	if c.OnStart != nil {
		onStart(c.OnStart, cmd, exited)
	}
	if c.Live != nil {
		c.Live(out.Snapshot)
	}

	reaped, leaderDone := awaitEnd(ctx, timeout, exited, &res)
	stopped := !leaderDone
	if stopped {
		reaped = e.stop(pgid, exited, e.killGrace(ctx))
	} else {
		reapAndSweep(cmd, pgid, reaped, &res)
		reaped = true
	}
	e.drain(pr, copied, pgid, stopped || res.KilledLeftovers)

	if !reaped {
		_ = cmd.Wait() // exit status is taken from ProcessState below
	}
	// Finished - Started is the monotonic run time, whatever the wall
	// clock did meanwhile (a step, a leap second, NTP slewing).
	res.Finished = res.Started.Add(time.Since(began))
	res.Output = out.Bytes()
	res.Dropped = out.Dropped()
	if st := cmd.ProcessState; st != nil {
		if ws, ok := st.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			res.Signal = signalName(ws.Signal())
		} else {
			res.ExitCode = st.ExitCode()
		}
	}
	return res
}

// start checks what would keep c from starting and starts its shell in a
// process group of its own, writing into the returned pipe; pidfd is the
// child's pidfd, which the caller must close, or -1. On an error nothing
// runs; res carries what the caller reports besides the error.
func (e *Executor) start(ctx context.Context, c Command, res *Result) (cmd *exec.Cmd, pr *os.File, pidfd int, err error) {
	if err := ctx.Err(); err != nil {
		res.Canceled = true
		return nil, nil, -1, fmt.Errorf("start command: %w", err)
	}
	if err := checkDir(c.Dir); err != nil {
		res.Output = []byte("queuectl: " + err.Error() + "\n")
		return nil, nil, -1, fmt.Errorf("start command: %w", err)
	}
	pr, pw, err := os.Pipe()
	if err != nil {
		return nil, nil, -1, fmt.Errorf("create output pipe: %w", err)
	}

	cmd = exec.Command(e.cfg.Shell[0], append(slices.Clone(e.cfg.Shell[1:]), c.Script)...)
	cmd.Env = append(os.Environ(), c.Env...) // exec keeps the last of duplicate keys
	cmd.Dir = c.Dir
	cmd.Stdout, cmd.Stderr = pw, pw // *os.File: the child writes straight into our pipe
	if null := e.nullDevice(); null != nil {
		cmd.Stdin = null // else exec opens and closes /dev/null itself, for each command
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	fd := askPidfd(cmd.SysProcAttr)

	err = cmd.Start()
	pw.Close() // only the child (and its descendants) hold the write end now
	if err != nil {
		pr.Close()
		if *fd >= 0 {
			syscall.Close(*fd)
		}
		return nil, nil, -1, fmt.Errorf("start command: %w", err)
	}
	return cmd, pr, *fd, nil
}

// nullDevice returns /dev/null open for reading, shared by every command
// the executor starts (a child gets its own copy of the descriptor), or
// nil if it would not open. The file is closed when the executor is
// garbage: os.File closes itself then. Opening it once instead of once
// per command saves seven system calls per job (open, four fcntl, an
// epoll registration and close under strace: 0.93 × a worker's own CPU
// per `true` job, docs/benchmarks.md, "A freed slot's claim joins its
// job's outcome").
func (e *Executor) nullDevice() *os.File {
	e.nullOnce.Do(func() {
		e.null, _ = os.Open(os.DevNull)
	})
	return e.null
}

// readOutput copies the pipe into a capped buffer until every writer is
// gone (or the pipe is closed); copied is closed then.
func readOutput(pr *os.File, limit int64) (out *capture, copied chan struct{}) {
	out = newCapture(limit)
	copied = make(chan struct{})
	go func() {
		defer close(copied)
		buf := make([]byte, 32<<10)
		for {
			n, err := pr.Read(buf)
			_, _ = out.Write(buf[:n])
			if err != nil {
				return // io.EOF once every writer is gone, or our forced Close
			}
		}
	}()
	return out, copied
}

// onStart calls fn with the process group id; if fn panics, the group is
// killed and the shell reaped before the panic goes on.
func onStart(fn func(pgid int), cmd *exec.Cmd, exited <-chan bool) {
	pgid := cmd.Process.Pid
	done := false
	defer func() {
		if !done { // fn panicked: do not leave the group running
			_ = KillGroup(pgid, syscall.SIGKILL)
			if !<-exited {
				_ = cmd.Wait()
			}
		}
	}()
	fn(pgid)
	done = true
}

// awaitEnd waits until the shell exits, the timeout fires or ctx ends, and
// records which in res. An exit that raced with the deadline or the cancel
// is a normal exit.
func awaitEnd(ctx context.Context, timeout <-chan time.Time, exited <-chan bool, res *Result) (reaped, leaderDone bool) {
	select {
	case reaped = <-exited:
		return reaped, true
	case <-timeout:
		res.TimedOut = true
	case <-ctx.Done():
		res.Canceled = true
	}
	select {
	case reaped = <-exited:
		res.TimedOut, res.Canceled = false, false
		return reaped, true
	default:
	}
	return false, false
}

// KillGracer is a cause of cancellation (context.Cause) that asks for a
// shorter grace between SIGTERM and SIGKILL than Config.KillGrace: a
// worker that must have a job's processes gone by a deadline (its lease)
// cancels with one.
type KillGracer interface{ KillGrace() time.Duration }

// killGrace is the grace of a stop: Config.KillGrace, or the shorter one
// that ctx's cause asks for.
func (e *Executor) killGrace(ctx context.Context) time.Duration {
	if kg, ok := context.Cause(ctx).(KillGracer); ok && kg.KillGrace() < e.cfg.KillGrace {
		return max(kg.KillGrace(), 0)
	}
	return e.cfg.KillGrace
}

// stop stops the group of a shell that has not exited and returns once the
// shell has; it reports whether the shell was reaped.
func (e *Executor) stop(pgid int, exited <-chan bool, grace time.Duration) (reaped bool) {
	reaped, leaderDone := e.stopGroup(pgid, exited, grace)
	if !leaderDone {
		reaped = <-exited
	}
	// The shell has exited. Kill whatever is left of its group. While
	// the shell is unreaped its pid cannot be reused, so the signal is
	// safe even when the group looks empty (it catches members forked
	// during a scan).
	if !reaped || proc.GroupAlive(pgid) {
		_ = KillGroup(pgid, syscall.SIGKILL)
	}
	return reaped
}

// reapAndSweep handles a normal exit, the common case: it reaps the shell
// first, then probes the group with signal 0. While any process is left in
// the group, its id cannot be reused, so the probe and the kill are safe;
// and an empty group (ESRCH) costs no scan of /proc.
func reapAndSweep(cmd *exec.Cmd, pgid int, reaped bool, res *Result) {
	if !reaped {
		_ = cmd.Wait() // exit status is taken from ProcessState
	}
	if syscall.Kill(-pgid, 0) == nil {
		res.KilledLeftovers = proc.GroupAlive(pgid) // zombies alone are not leftovers
		_ = KillGroup(pgid, syscall.SIGKILL)
	}
}

// drain collects the remaining output and, when the group was killed,
// lets its members disappear, within WaitDelay.
func (e *Executor) drain(pr *os.File, copied <-chan struct{}, pgid int, killed bool) {
	deadline := time.Now().Add(e.cfg.WaitDelay)
	t := time.NewTimer(e.cfg.WaitDelay)
	defer t.Stop()
	select {
	case <-copied:
	case <-t.C:
		pr.Close() // held open by a process outside the group
		<-copied
	}
	if killed {
		waitGroupGone(pgid, deadline)
	}
}

// stopGroup sends SIGTERM (and SIGCONT) to the group, then waits until the
// shell has exited and no other member is alive, or until grace passes,
// and then sends SIGKILL to the group. It reports whether the shell has
// exited (and whether it was reaped) while waiting.
func (e *Executor) stopGroup(pgid int, exited <-chan bool, graceFor time.Duration) (reaped, leaderDone bool) {
	_ = KillGroup(pgid, syscall.SIGTERM)
	_ = KillGroup(pgid, syscall.SIGCONT)
	grace := time.NewTimer(graceFor)
	defer grace.Stop()
	poll := 5 * time.Millisecond
	for !leaderDone || proc.GroupAlive(pgid) {
		var tick <-chan time.Time
		if leaderDone {
			// Only other members are left; poll for them.
			tick = time.After(poll)
			poll = min(2*poll, 100*time.Millisecond)
		}
		select {
		case reaped = <-exited:
			leaderDone = true
		case <-tick:
		case <-grace.C:
			if !reaped || proc.GroupAlive(pgid) {
				_ = KillGroup(pgid, syscall.SIGKILL)
			}
			return reaped, leaderDone
		}
	}
	return reaped, leaderDone
}

// waitGroupGone polls until no live process is left in group pgid or until
// the deadline passes.
func waitGroupGone(pgid int, deadline time.Time) {
	poll := time.Millisecond
	for proc.GroupAlive(pgid) {
		left := time.Until(deadline)
		if left <= 0 {
			return
		}
		time.Sleep(min(poll, left))
		poll = min(2*poll, 50*time.Millisecond)
	}
}

// checkDir reports a working directory the shell could not start in, in
// words: exec would report it as a failure to run the shell itself.
func checkDir(dir string) error {
	if dir == "" {
		return nil
	}
	fi, err := os.Stat(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("working directory %s does not exist", dir)
	case err != nil:
		return fmt.Errorf("working directory: %w", err)
	case !fi.IsDir():
		return fmt.Errorf("working directory %s is not a directory", dir)
	}
	return nil
}
