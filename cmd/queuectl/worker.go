package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"math/rand/v2"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/queuectl/queuectl/executor"
	"github.com/queuectl/queuectl/internal/proc"
	"github.com/queuectl/queuectl/queue"
	"github.com/rs/zerolog"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

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

	cpuProfile string
}

func (o *workerOptions) flags(cmd *cobra.Command) {
	f := cmd.Flags()
	f.StringArrayVarP(&o.queues, "queue", "q", nil, "queue to work (repeatable; default: every queue)")
	f.DurationVar(&o.grace, "grace", 0, "after a stop signal, how long running jobs may finish before they are stopped and put back (0: until a second signal)")
	f.DurationVar(&o.lease, "lease", 30*time.Second, "job lease; a job whose worker stops renewing it is rescued after this long")
	f.DurationVar(&o.poll, "poll", 2*time.Second, "fallback poll interval when idle (wake-ups normally start jobs at once)")
	f.DurationVar(&o.kill, "kill-grace", 5*time.Second, "on timeout or stop, how long a job has between SIGTERM and SIGKILL")
	retryJitterFlag(f, &o.jitter)
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
		Args:   cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return a.runWorker(cmd.Context(), &o)
		},
	}
	o.flags(cmd)
	cmd.Flags().IntVar(&o.slots, "slots", 1, "jobs this process runs at once")
	cmd.Flags().StringVar(&o.cpuProfile, "cpuprofile", "", "write a CPU profile of this worker to the file (for performance work)")
	return cmd
}

func (a *app) runWorker(ctx context.Context, o *workerOptions) error {
	log, err := a.logger(a.stderr)
	if err != nil {
		return err
	}
	if o.slots < 1 {
		return usagef("--slots %d: must be at least 1", o.slots)
	}
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
	dsn, err := a.dsn()
	if err != nil {
		return err
	}
	st, err := openStore(ctx, dsn)
	if err != nil {
		return err
	}
	defer st.Close()
	log.Info().Str("database", redactDSN(dsn)).Strs("queues", o.queues).Int("slots", o.slots).Msg("worker starting")
	eng := queue.NewEngine(st, shellRunner{executor.New(executor.Config{KillGrace: o.kill})}, queue.EngineConfig{
		Lanes: []queue.Lane{{Queues: o.queues, Slots: o.slots}},
		Lease: o.lease, Poll: o.poll, Log: log, Retry: retry, Host: a.hostName(), Processes: proc.Host{},
	})
	return serve(ctx, log, o.grace, eng.Start, eng.Stop, eng.StopRequested())
}

// serve runs a long-lived service until SIGINT or SIGTERM (or until it asks
// to stop), then stops it in two phases: the first signal drains, a second
// signal or the grace period ends running work.
func serve(ctx context.Context, log zerolog.Logger, grace time.Duration,
	start func(context.Context) error, stop func(context.Context) error, asked <-chan struct{}) error {
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
	defer signal.Stop(sigs)
	if err := start(ctx); err != nil {
		return err
	}
	select {
	case s := <-sigs:
		log.Info().Str("signal", s.String()).Msg("stopping: running jobs may finish (send the signal again to stop them)")
	case <-asked:
		log.Info().Msg("stop requested: running jobs may finish")
	case <-ctx.Done():
	}
	stopCtx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if grace > 0 {
		t := time.AfterFunc(grace, func() {
			log.Warn().Dur("grace", grace).Msg("grace period over: stopping running jobs")
			cancel()
		})
		defer t.Stop()
	}
	done := make(chan struct{})
	defer close(done)
	go func() {
		select {
		case s := <-sigs:
			log.Warn().Str("signal", s.String()).Msg("second signal: stopping running jobs")
			cancel()
		case <-done:
		}
	}()
	return stop(stopCtx)
}

func (a *app) workerStartCmd() *cobra.Command {
	var o workerOptions
	var count int
	var foreground bool
	cmd := &cobra.Command{
		Use:   "start",
		Short: "Start worker processes",
		Long: `Start N worker processes, each running one job at a time.

By default they detach, log to $QUEUECTL_HOME/logs/, and the command returns
once they are registered, printing their pids. With --foreground they stay
attached: Ctrl-C stops them gracefully, a second Ctrl-C stops running jobs
and puts them back in the queue.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if count < 1 {
				return usagef("--count %d: must be at least 1", count)
			}
			// Check what the worker processes would refuse before starting any.
			if _, err := retryPolicy(o.jitter); err != nil {
				return err
			}
			if _, err := a.logger(io.Discard); err != nil {
				return err
			}
			if foreground && count == 1 {
				o.slots = 1
				return a.runWorker(cmd.Context(), &o)
			}
			return a.startWorkers(cmd, &o, count, foreground)
		},
	}
	o.flags(cmd)
	cmd.Flags().IntVarP(&count, "count", "n", 1, "number of worker processes")
	cmd.Flags().BoolVar(&foreground, "foreground", false, "stay attached instead of detaching")
	return cmd
}

// childArgs are the arguments of one worker process.
func (a *app) childArgs(cmd *cobra.Command, dsn string, o *workerOptions) []string {
	args := []string{"worker", "run", "--db", dsn, "--log-level", a.logLevel}
	for _, q := range o.queues {
		args = append(args, "--queue", q)
	}
	for _, name := range []string{"grace", "lease", "poll", "kill-grace", "retry-jitter"} {
		if f := cmd.Flags().Lookup(name); f.Changed {
			args = append(args, "--"+name, f.Value.String())
		}
	}
	return args
}

func (a *app) startWorkers(cmd *cobra.Command, o *workerOptions, count int, foreground bool) error {
	ctx := cmd.Context()
	dsn, err := a.dsn()
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
	args := a.childArgs(cmd, dsn, o)
	if foreground {
		return a.runAttached(self, args, count)
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
	var logs []string
	for range count {
		c, logPath, err := startDetached(self, append(args, "--log-format", "json"), logDir)
		if err != nil {
			return err
		}
		children = append(children, c)
		logs = append(logs, logPath)
	}
	if err := waitRegistered(ctx, st, children, logs); err != nil {
		return err
	}
	for _, c := range children {
		fmt.Fprintln(a.stdout, c.Process.Pid)
		c.Process.Release()
	}
	fmt.Fprintf(a.stderr, "started %d worker(s) on %s; logs in %s\n", count, redactDSN(dsn), logDir)
	return nil
}

// startDetached starts a worker in its own session with output to a log file
// named after its pid.
func startDetached(self string, args []string, logDir string) (*exec.Cmd, string, error) {
	tmp, err := os.CreateTemp(logDir, "worker-starting-*.log")
	if err != nil {
		return nil, "", fmt.Errorf("create worker log: %w", err)
	}
	defer tmp.Close()
	devnull, err := os.Open(os.DevNull)
	if err != nil {
		return nil, "", err
	}
	defer devnull.Close()
	c := exec.Command(self, args...)
	c.Stdin, c.Stdout, c.Stderr = devnull, tmp, tmp
	c.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := c.Start(); err != nil {
		os.Remove(tmp.Name())
		return nil, "", fmt.Errorf("start worker: %w", err)
	}
	logPath := filepath.Join(logDir, fmt.Sprintf("worker-%d.log", c.Process.Pid))
	if err := os.Rename(tmp.Name(), logPath); err != nil {
		logPath = tmp.Name()
	}
	return c, logPath, nil
}

// waitRegistered returns once every child has registered in the store, or
// reports the first that died, with the end of its log.
func waitRegistered(ctx context.Context, st queue.Store, children []*exec.Cmd, logs []string) error {
	exited := make(chan int, len(children))
	for i, c := range children {
		go func() {
			c.Wait()
			exited <- i
		}()
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		ws, err := st.ListWorkers(ctx)
		if err != nil {
			return err
		}
		registered := map[int]bool{}
		for _, w := range ws {
			registered[w.PID] = true
		}
		all := true
		for _, c := range children {
			all = all && registered[c.Process.Pid]
		}
		if all {
			return nil
		}
		select {
		case i := <-exited:
			return fmt.Errorf("worker %d exited at start: %s", children[i].Process.Pid, tail(logs[i]))
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("workers did not register within 30s; see %s", filepath.Dir(logs[0]))
		}
	}
}

func tail(path string) string {
	b, _ := os.ReadFile(path)
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	return oneLine(lines[len(lines)-1])
}

// runAttached runs count workers as child processes of this one, each in its
// own process group so that a terminal's Ctrl-C reaches them once, through
// this process, and waits for them.
func (a *app) runAttached(self string, args []string, count int) error {
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
	defer signal.Stop(sigs)
	var children []*exec.Cmd
	done := make(chan error, count)
	for range count {
		c := exec.Command(self, args...)
		c.Stdout, c.Stderr = a.stderr, a.stderr
		c.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		if err := c.Start(); err != nil {
			for _, o := range children {
				o.Process.Signal(syscall.SIGTERM)
			}
			return fmt.Errorf("start worker: %w", err)
		}
		children = append(children, c)
		fmt.Fprintln(a.stdout, c.Process.Pid)
		go func() { done <- c.Wait() }()
	}
	var failed error
	for left := count; left > 0; {
		select {
		case s := <-sigs:
			for _, c := range children {
				c.Process.Signal(s)
			}
		case err := <-done:
			left--
			if err != nil && failed == nil {
				failed = fmt.Errorf("worker: %w", err)
			}
		}
	}
	return failed
}

func (a *app) workerStopCmd() *cobra.Command {
	var timeout time.Duration
	var allHosts bool
	cmd := &cobra.Command{
		Use:   "stop",
		Short: "Stop this host's workers gracefully",
		Long: `Ask every worker on this host to finish its current job and exit, and wait
until they are gone. With --timeout, running jobs still going after that long
are stopped and put back in the queue (their attempt is not charged).

With --all-hosts, workers on other hosts (sharing a PostgreSQL database) are
asked too, through the database: they see the request at their next
heartbeat and stop the same graceful way. They cannot be forced from here;
after --timeout the command reports those still running.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return a.withStore(cmd, func(ctx context.Context, st queue.Store) error {
				return a.stopWorkers(ctx, st, timeout, allHosts)
			})
		},
	}
	cmd.Flags().DurationVar(&timeout, "timeout", 0, "how long running jobs may take before they are stopped and put back (0: wait for them)")
	cmd.Flags().BoolVar(&allHosts, "all-hosts", false, "also stop the workers of other hosts, through the database")
	return cmd
}

func (a *app) stopWorkers(ctx context.Context, st queue.Store, timeout time.Duration, allHosts bool) error {
	ws, err := st.ListWorkers(ctx)
	if err != nil {
		return err
	}
	host := a.hostName()
	boot := proc.BootID()
	var local []*queue.WorkerInfo
	remote := map[string]bool{}
	for _, w := range ws {
		switch {
		case w.Host == host && w.BootID == boot:
			if proc.Alive(w.PID, w.ProcStart) {
				local = append(local, w)
			}
		case allHosts:
			remote[w.ID] = true
		}
	}
	if len(local) == 0 && len(remote) == 0 {
		fmt.Fprintln(a.stdout, "no workers running on this host")
		return nil
	}
	// Local workers get a signal, not the store's stop request, so that they
	// see exactly one request now and a second one only when --timeout
	// passes; remote ones can only be asked through the store.
	signalAll(local, syscall.SIGTERM)
	if len(remote) > 0 {
		if err := st.RequestStop(ctx, slices.Collect(maps.Keys(remote))); err != nil {
			return err
		}
	}
	asked := len(local) + len(remote)
	start := time.Now()
	forced := false
	lastList := time.Time{}
	for {
		alive := 0
		for _, w := range local {
			if proc.Alive(w.PID, w.ProcStart) {
				alive++
			}
		}
		if len(remote) > 0 && time.Since(lastList) > 250*time.Millisecond {
			if err := a.dropUnregistered(ctx, st, remote); err != nil {
				return err
			}
			lastList = time.Now()
		}
		if alive == 0 && len(remote) == 0 {
			break
		}
		if alive == 0 && timeout > 0 && time.Since(start) > timeout {
			return fmt.Errorf("%d worker(s) on other hosts still running after %s: %s", len(remote), timeout,
				strings.Join(slices.Sorted(maps.Keys(remote)), ", "))
		}
		if timeout > 0 && !forced && time.Since(start) > timeout {
			fmt.Fprintf(a.stderr, "timeout: stopping the running jobs of %d worker(s); they will be retried\n", alive)
			signalAll(local, syscall.SIGTERM) // the second signal ends running jobs
			forced = true
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(25 * time.Millisecond):
		}
	}
	fmt.Fprintf(a.stdout, "stopped %d worker(s)\n", asked)
	return nil
}

// dropUnregistered removes from ids the workers no longer registered.
func (a *app) dropUnregistered(ctx context.Context, st queue.Store, ids map[string]bool) error {
	ws, err := st.ListWorkers(ctx)
	if err != nil {
		return err
	}
	still := map[string]bool{}
	for _, w := range ws {
		still[w.ID] = true
	}
	for id := range ids {
		if !still[id] {
			delete(ids, id)
		}
	}
	return nil
}

func signalAll(ws []*queue.WorkerInfo, sig syscall.Signal) {
	for _, w := range ws {
		if proc.Alive(w.PID, w.ProcStart) {
			if err := syscall.Kill(w.PID, sig); err != nil && !errors.Is(err, syscall.ESRCH) {
				continue
			}
		}
	}
}

func (a *app) workerListCmd() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List registered workers",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return a.withStore(cmd, func(ctx context.Context, st queue.Store) error {
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
				fmt.Fprintln(tw, "PID\tHOST\tQUEUES\tSTARTED\tHEARTBEAT\tCURRENT JOB")
				for _, w := range ws {
					qs := "*"
					if len(w.Queues) > 0 {
						qs = strings.Join(w.Queues, ",")
					}
					fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", strconv.Itoa(w.PID), printable(w.Host), qs, fmtTime(w.StartedAt),
						fmtTime(w.HeartbeatAt), dash(strings.Join(w.CurrentJobs, ",")))
				}
				return tw.Flush()
			})
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}
