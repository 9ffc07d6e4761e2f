package main

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/queuectl/queuectl/config"
	"github.com/queuectl/queuectl/executor"
	"github.com/queuectl/queuectl/internal/proc"
	"github.com/queuectl/queuectl/internal/supervise"
	"github.com/queuectl/queuectl/queue"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// The engine reaches this host's processes through internal/proc.
var _ queue.Processes = proc.Host{}

func (a *app) workerCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "worker",
		Short: "Start, stop and list worker processes",
	}
	cmd.AddCommand(a.workerStartCmd(), a.workerStopCmd(), a.workerListCmd(), a.workerRunCmd())
	return cmd
}

// workerOptions configure one worker process.
type workerOptions struct {
	queues []string
	slots  int
	grace  time.Duration
	lease  time.Duration
	poll   time.Duration
	kill   time.Duration
	jitter float64

	// Detached workers log through a rotating file in logDir (worker run's
	// hidden --log-dir, set by worker start).
	logDir   string
	rotation supervise.LogRotation

	cpuProfile string
}

func (o *workerOptions) flags(cmd *cobra.Command) {
	f := cmd.Flags()
	f.StringArrayVarP(&o.queues, "queue", "q", nil, "queue to work (repeatable; default: every queue)")
	durationVar(f, &o.grace, "grace", 0, "after a stop signal, how long running jobs may finish before they are stopped and put back (0: until a second signal)")
	durationVar(f, &o.lease, "lease", 30*time.Second, "job lease, 1s to 24h; a job whose worker stops renewing it is rescued after this long")
	durationVar(f, &o.poll, "poll", 2*time.Second, "fallback poll interval when idle, 100ms to 1h (wake-ups normally start jobs at once)")
	durationVar(f, &o.kill, "kill-grace", 5*time.Second, "on timeout or stop, how long a job has between SIGTERM and SIGKILL, 100ms to 1h")
	retryJitterFlag(f, &o.jitter)
	f.IntVar(&o.rotation.MaxSizeMB, "log-max-size", supervise.DefaultLogRotation.MaxSizeMB, "detached workers: start a new log file when the current one reaches this many megabytes")
	f.IntVar(&o.rotation.Backups, "log-backups", supervise.DefaultLogRotation.Backups, "detached workers: how many rotated log files each worker keeps")
}

// durationRange is the range a duration flag accepts.
type durationRange struct {
	flag     string
	min, max time.Duration
}

// Ranges of the tuning flags of worker start, worker run and run. The
// engine and the executor take 0 or less for their defaults, so a value
// out of range is refused here rather than silently replaced.
var (
	// A lease is renewed every third of itself, and a running job whose
	// lease was not renewed for three quarters of it is stopped: under a
	// second, a single slow commit stops running jobs. Over a day, a job
	// of a worker that vanished from another host waits that long to be
	// rescued.
	leaseRange = durationRange{"lease", time.Second, 24 * time.Hour}
	// Idle workers are woken when jobs arrive; the poll is the fallback.
	// Under 100ms it only turns idle workers into a stream of claims.
	pollRange = durationRange{"poll", 100 * time.Millisecond, time.Hour}
	// Time for a job's processes to act on SIGTERM; shorter is SIGKILL
	// at once in all but name.
	killGraceRange = durationRange{"kill-grace", 100 * time.Millisecond, time.Hour}
)

// check refuses d outside the range, naming the flag.
func (r durationRange) check(d time.Duration) error {
	if d < r.min || d > r.max {
		return usagef("--%s %s: must be from %s to %s", r.flag, flagDuration(d), flagDuration(r.min), flagDuration(r.max))
	}
	return nil
}

// notNegative refuses a negative duration for a flag where 0 has a meaning
// of its own (what says it).
func notNegative(flag string, d time.Duration, zero string) error {
	if d < 0 {
		return usagef("--%s %s: must not be negative (0: %s)", flag, flagDuration(d), zero)
	}
	return nil
}

// flagDuration writes d as a duration flag takes it: compactly, but in
// hours rather than days ("24h", "100ms", "0").
func flagDuration(d time.Duration) string {
	if d != 0 && d%time.Hour == 0 {
		return strconv.FormatInt(int64(d/time.Hour), 10) + "h"
	}
	return queue.FormatDuration(d)
}

// checkTuning checks the duration flags before a worker starts.
func (o *workerOptions) checkTuning() error {
	var queues []string // each once, as given
	for _, q := range o.queues {
		if err := queue.CheckName("queue", q); err != nil {
			return usageError{fmt.Errorf("--queue: %w", err)}
		}
		if !slices.Contains(queues, q) {
			queues = append(queues, q)
		}
	}
	o.queues = queues
	if err := pollRange.check(o.poll); err != nil {
		return err
	}
	return checkStops(o.lease, o.kill, o.grace)
}

// checkStops checks the flags worker start, worker run and run share:
// --lease, --kill-grace and --grace.
func checkStops(lease, kill, grace time.Duration) error {
	if err := leaseRange.check(lease); err != nil {
		return err
	}
	if err := killGraceRange.check(kill); err != nil {
		return err
	}
	return notNegative("grace", grace, "until a second signal")
}

func retryJitterFlag(f *pflag.FlagSet, v *float64) {
	f.Float64Var(v, "retry-jitter", 0, "add a random delay of up to this fraction of each retry's backoff (0..1), to spread retries")
}

// retryPolicy checks --retry-jitter and builds the policy.
func retryPolicy(jitter float64) (queue.RetryPolicy, error) {
	if jitter < 0 || jitter > 1 || jitter != jitter {
		return queue.RetryPolicy{}, usagef("--retry-jitter %g: must be from 0 to 1", jitter)
	}
	return queue.RetryPolicy{Jitter: jitter, Rand: rand.Float64}, nil
}

// workerRunCmd runs one worker in this process. worker start uses it.
func (a *app) workerRunCmd() *cobra.Command {
	var o workerOptions
	cmd := &cobra.Command{
		Use:    "run",
		Short:  "Run one worker process in the foreground",
		Hidden: true,
		Args:   noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return a.runWorker(cmd.Context(), &o)
		},
	}
	o.flags(cmd)
	cmd.Flags().IntVar(&o.slots, "slots", 1, "jobs this process runs at once")
	cmd.Flags().StringVar(&o.cpuProfile, "cpuprofile", "", "write a CPU profile of this worker to the file (for performance work)")
	cmd.Flags().StringVar(&o.logDir, "log-dir", "", "log to a rotating file worker-PID.log in this directory instead of stderr")
	return cmd
}

func (a *app) runWorker(ctx context.Context, o *workerOptions) error {
	if err := o.checkTuning(); err != nil {
		return err
	}
	if err := o.rotation.Check(); err != nil {
		return usageError{err}
	}
	var logOut io.Writer = a.stderr
	if o.logDir != "" {
		w := supervise.OpenLog(o.logDir, os.Getpid(), o.rotation)
		defer w.Close()
		logOut = w
	}
	log, err := a.logger(logOut)
	if err != nil {
		return err
	}
	if o.slots < 1 {
		return usagef("--slots %d: must be at least 1", o.slots)
	}
	runtime.GOMAXPROCS(workerProcs(o.slots, runtime.GOMAXPROCS(0), os.Getenv("GOMAXPROCS")))
	if o.cpuProfile != "" {
		f, err := os.Create(o.cpuProfile)
		if err != nil {
			return err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
		defer pprof.StopCPUProfile()
	}
	retry, err := retryPolicy(o.jitter)
	if err != nil {
		return err
	}
	dsn, err := a.createDSN()
	if err != nil {
		return err
	}
	st, err := openStore(ctx, dsn)
	if err != nil {
		return err
	}
	defer st.Close()
	log.Info().Str("database", redactDSN(dsn)).Strs("queues", o.queues).Int("slots", o.slots).Int("gomaxprocs", runtime.GOMAXPROCS(0)).Msg("worker starting")
	eng := queue.NewEngine(st, shellRunner{executor.New(executor.Config{KillGrace: o.kill}), jobDBEnv(dsn)}, queue.EngineConfig{
		Lanes: []queue.Lane{{Queues: o.queues, Slots: o.slots}},
		Lease: o.lease, Poll: o.poll, Log: log, Retry: retry, Host: a.hostName(), Processes: proc.Host{},
	})
	err = supervise.Serve(ctx, log, o.grace, eng.Start, eng.Stop, eng.StopRequested())
	logProcessStats(log, st)
	return err
}

// maxConcurrency bounds --concurrency: each slot may hold a shell.
const maxConcurrency = config.MaxConcurrency

// maxCount bounds --count: each worker is a process with its own
// connections to the database, and a mistyped count would otherwise start
// them until the host or the database runs out.
const maxCount = 1000

func (a *app) workerStartCmd() *cobra.Command {
	var o workerOptions
	var count int
	var foreground bool
	cmd := &cobra.Command{
		Use:   "start",
		Short: "Start worker processes",
		Long: `Start N worker processes, each running up to --concurrency jobs at once
(default one).

By default they detach, log to $QUEUECTL_HOME/logs/worker-PID.log (rotated
at --log-max-size megabytes, --log-backups old files kept per worker), and
the command returns once they are registered, printing their pids. With --foreground they stay
attached: Ctrl-C stops them gracefully, a second Ctrl-C stops running jobs
and puts them back in the queue.`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if count < 1 || count > maxCount {
				return usagef("--count %d: must be from 1 to %d", count, maxCount)
			}
			if o.slots < 1 || o.slots > maxConcurrency {
				return usagef("--concurrency %d: must be from 1 to %d", o.slots, maxConcurrency)
			}
			// Check what the worker processes would refuse before starting any.
			if err := o.checkTuning(); err != nil {
				return err
			}
			if _, err := retryPolicy(o.jitter); err != nil {
				return err
			}
			if err := o.rotation.Check(); err != nil {
				return usageError{err}
			}
			if _, err := a.logger(io.Discard); err != nil {
				return err
			}
			if foreground && count == 1 {
				return a.runWorker(cmd.Context(), &o)
			}
			return a.startWorkers(cmd, &o, count, foreground)
		},
	}
	o.flags(cmd)
	cmd.Flags().IntVarP(&count, "count", "n", 1, "number of worker processes, 1 to 1000")
	cmd.Flags().IntVar(&o.slots, "concurrency", 1, "jobs each worker process runs at once")
	cmd.Flags().BoolVar(&foreground, "foreground", false, "stay attached instead of detaching")
	return cmd
}

// childArgs are the arguments of one worker process. The database is not
// among them: every user can read a process's arguments (ps), and a
// PostgreSQL URL may hold a password. childEnv passes it.
func (a *app) childArgs(cmd *cobra.Command, o *workerOptions) []string {
	args := []string{"worker", "run", "--log-level", a.logLevel, "--log-format", a.logFormat, "--slots", strconv.Itoa(o.slots)}
	for _, q := range o.queues {
		args = append(args, "--queue", q)
	}
	for _, name := range []string{"grace", "lease", "poll", "kill-grace", "retry-jitter", "log-max-size", "log-backups"} {
		if f := cmd.Flags().Lookup(name); f.Changed {
			args = append(args, "--"+name, f.Value.String())
		}
	}
	return args
}

func (a *app) startWorkers(cmd *cobra.Command, o *workerOptions, count int, foreground bool) error {
	ctx := cmd.Context()
	dsn, err := a.createDSN()
	if err != nil {
		return err
	}
	if !isPostgresURL(dsn) {
		if dsn, err = filepath.Abs(dsn); err != nil {
			return err
		}
	}
	st, err := openStore(ctx, dsn) // creates and migrates the database once, up front
	if err != nil {
		return err
	}
	defer st.Close()
	self, err := os.Executable()
	if err != nil {
		return fmt.Errorf("find queuectl binary: %w", err)
	}
	args, env := a.childArgs(cmd, o), childEnv(dsn)
	if foreground {
		return supervise.RunAttached(self, args, env, count, a.stdout, a.stderr)
	}
	home, err := a.home()
	if err != nil {
		return err
	}
	logDir := filepath.Join(home, "logs")
	if err := os.MkdirAll(logDir, 0o700); err != nil {
		return fmt.Errorf("create log directory: %w", err)
	}
	var children []*exec.Cmd
	var outs []string
	for range count {
		c, outPath, err := supervise.StartDetached(self, append(args, "--log-format", "json", "--log-dir", logDir), env, logDir)
		if err != nil {
			return stopStarted(children, err)
		}
		children = append(children, c)
		outs = append(outs, outPath)
	}
	if err := supervise.WaitRegistered(ctx, st, children, outs); err != nil {
		return stopStarted(children, err)
	}
	for _, c := range children {
		fmt.Fprintln(a.stdout, c.Process.Pid)
		c.Process.Release()
	}
	fmt.Fprintf(a.stderr, "started %d worker(s) on %s; logs in %s\n", count, redactDSN(dsn), logDir)
	return nil
}

// stopStarted makes worker start all or none: when one worker fails to
// start (err), the children started are stopped (SIGTERM: they drain), so
// that running the command again does not leave more workers than asked
// for. It returns err, saying how many it stopped.
func stopStarted(children []*exec.Cmd, err error) error {
	n := 0
	for _, c := range children {
		if c.Process.Signal(syscall.SIGTERM) == nil { // not if it exited
			n++
		}
	}
	if n == 0 {
		return err
	}
	return fmt.Errorf("%w; stopped the %d worker(s) started with it", err, n)
}

func (a *app) workerStopCmd() *cobra.Command {
	var timeout time.Duration
	var allHosts bool
	cmd := &cobra.Command{
		Use:   "stop",
		Short: "Stop this host's workers gracefully",
		Long: `Ask every worker on this host to finish its current job and exit, and wait
until they are gone. A queuectl run service is left running (it says so):
stop it with SIGTERM or its service manager. With --timeout, running jobs still going after that long
are stopped and put back in the queue (their attempt is not charged). On
Linux a worker still alive then that has not been heard from in 30s (hung,
or stopped) is killed, with the processes of its running jobs, which the
next worker rescues as lost attempts.

With --all-hosts, workers on other hosts (sharing a PostgreSQL database) are
asked too, through the database: they see the request at their next
heartbeat and stop the same graceful way. They cannot be forced from here;
after --timeout the command reports those still running.`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := notNegative("timeout", timeout, "wait for running jobs"); err != nil {
				return err
			}
			return a.withReadStore(cmd, func(ctx context.Context, st queue.Store) error {
				return supervise.Stop(ctx, st, supervise.StopParams{
					Host: a.hostName(), Timeout: timeout, AllHosts: allHosts, Self: a.getenv("QUEUECTL_WORKER"), Now: a.now,
					Stdout: a.stdout, Stderr: a.stderr,
				})
			})
		},
	}
	durationVar(cmd.Flags(), &timeout, "timeout", 0, "how long running jobs may take before they are stopped and put back (0: wait for them)")
	cmd.Flags().BoolVar(&allHosts, "all-hosts", false, "also stop the workers of other hosts, through the database")
	return cmd
}

func (a *app) workerListCmd() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List registered workers",
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return a.withReadStore(cmd, func(ctx context.Context, st queue.Store) error {
				ws, err := st.ListWorkers(ctx)
				if err != nil {
					return err
				}
				if asJSON {
					if ws == nil {
						ws = []*queue.WorkerInfo{}
					}
					return a.printJSON(ws)
				}
				tw := a.table()
				fmt.Fprintln(tw, "PID\tHOST\tKIND\tQUEUES\tSTARTED\tHEARTBEAT\tCURRENT JOB")
				for _, w := range ws {
					qs := "*"
					if len(w.Queues) > 0 {
						qs = printable(strings.Join(w.Queues, ","))
					}
					fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", strconv.Itoa(w.PID), printable(w.Host), w.Kind(), qs, fmtTime(w.StartedAt),
						fmtTime(w.HeartbeatAt), dash(strings.Join(w.CurrentJobs, ",")))
				}
				return tw.Flush()
			})
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

// workerProcs is how many threads a worker process with slots slots runs Go
// code on: no more than it has slots, unless GOMAXPROCS (env) says. Its
// slots spend their time in SQLite, the network and the kernel, which do
// not hold a thread's turn to run Go code; a turn to spare only makes the
// scheduler wake a thread to look for work, and put it back to sleep,
// several times per job. With one slot on two cores, that was 15-20 % of
// the process's CPU per shell job (docs/benchmarks.md).
func workerProcs(slots, current int, env string) int {
	if env != "" || slots >= current {
		return current
	}
	return slots
}
