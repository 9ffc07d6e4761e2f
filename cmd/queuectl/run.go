package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"reflect"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/hashicorp/hcl/v2"
	"github.com/queuectl/queuectl/config"
	"github.com/queuectl/queuectl/executor"
	"github.com/queuectl/queuectl/internal/proc"
	"github.com/queuectl/queuectl/internal/sdnotify"
	"github.com/queuectl/queuectl/queue"
	"github.com/queuectl/queuectl/scheduler"
	"github.com/rs/zerolog"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// fileOptions locate and parametrize a configuration file. Every command
// takes them: the file's database becomes the command's database.
type fileOptions struct {
	path string
	vars []string
}

func (o *fileOptions) flags(fs *pflag.FlagSet, getenv func(string) string) {
	fs.StringVarP(&o.path, "config", "c", getenv("QUEUECTL_CONFIG"), "configuration file (HCL); its database is used unless --db or $QUEUECTL_DB is set (default $QUEUECTL_CONFIG)")
	fs.StringArrayVar(&o.vars, "var", nil, "set a variable of the configuration file: --var name=value (repeatable)")
}

// requireFile fails with a usage error when no configuration file is given.
func (a *app) requireFile(cmd *cobra.Command) error {
	if a.file.path == "" {
		return usagef("%s: a configuration file is required: -c FILE (or $QUEUECTL_CONFIG)", commandName(cmd))
	}
	return nil
}

// configFile loads the file named by -c once per command.
func (a *app) configFile() (*config.File, error) {
	if a.loaded == nil {
		f, err := a.loadFile(&a.file, config.Options{})
		if err != nil {
			return nil, err
		}
		a.loaded = f
	}
	return a.loaded, nil
}

// loadFile reads the file with opts and o's variables; on errors it prints
// every diagnostic to stderr and returns a silent exit 2. Warnings alone
// are printed and the file used.
func (a *app) loadFile(o *fileOptions, opts config.Options) (*config.File, error) {
	vars := map[string]string{}
	for _, v := range o.vars {
		k, val, ok := strings.Cut(v, "=")
		if !ok || k == "" {
			return nil, usagef("--var %q: use name=value", v)
		}
		vars[k] = val
	}
	opts.Vars = vars
	f, diags := config.Load(o.path, opts)
	if diags.HasErrors() {
		config.WriteDiagnostics(a.stderr, nil, diags)
		fmt.Fprintf(a.stderr, "%s: %d error(s)\n", o.path, countErrors(diags))
		return nil, silentError{exitUsage}
	}
	if len(diags) > 0 { // warnings only: shown, and the file is used
		config.WriteDiagnostics(a.stderr, nil, diags)
	}
	return f, nil
}

func countErrors(diags hcl.Diagnostics) int {
	n := 0
	for _, d := range diags {
		if d.Severity == hcl.DiagError {
			n++
		}
	}
	return n
}

func (a *app) validateCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "validate -c FILE",
		Short: "Check a configuration file and show what it declares",
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := a.requireFile(cmd); err != nil {
				return err
			}
			f, err := a.configFile()
			if err != nil {
				return err
			}
			now := a.now()
			var fires []string
			for _, t := range templates(f) {
				next := "never"
				if sc, err := scheduler.Parse(t); err == nil {
					if n := sc.Next(now); !n.IsZero() {
						next = n.Format(time.RFC3339)
					}
				}
				if !t.Enabled {
					next = "disabled"
				}
				fires = append(fires, t.Name+" "+next)
			}
			summary := fmt.Sprintf("%s is valid: %d queue(s), %d job(s)", a.file.path, len(f.Queues), len(f.Jobs))
			if len(fires) > 0 {
				summary += "; next fire: " + strings.Join(fires, ", ")
			}
			_, err = fmt.Fprintln(a.stdout, summary)
			return err
		},
	}
	return cmd
}

type runOptions struct {
	grace  time.Duration
	kill   time.Duration
	lease  time.Duration
	jitter float64
	retry  queue.RetryPolicy
}

func (a *app) runCmd() *cobra.Command {
	var o runOptions
	cmd := &cobra.Command{
		Use:   "run -c FILE [--var k=v]",
		Short: "Run the service: fire the file's cron jobs and work its queues",
		Long: `Run in the foreground: apply the file's queues and recurring jobs to the store,
fire cron slots, and run jobs of the declared queues (each with its
concurrency), ad-hoc ones included.

SIGINT/SIGTERM stop gracefully (running jobs finish; a second signal or
--grace stops them and puts them back). SIGHUP reloads the file; an invalid
file keeps the old one and the reason is logged. Several run and worker
processes may share one database.`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkStops(o.lease, o.kill, o.grace); err != nil {
				return err
			}
			if err := a.requireFile(cmd); err != nil {
				return err
			}
			return a.runService(cmd.Context(), &o)
		},
	}
	durationVar(cmd.Flags(), &o.grace, "grace", 0, "after a stop signal, how long running jobs may finish before they are stopped and put back (0: until a second signal)")
	durationVar(cmd.Flags(), &o.kill, "kill-grace", 5*time.Second, "on timeout or stop, how long a job has between SIGTERM and SIGKILL, 100ms to 1h")
	durationVar(cmd.Flags(), &o.lease, "lease", 30*time.Second, "job lease, 1s to 24h")
	retryJitterFlag(cmd.Flags(), &o.jitter)
	return cmd
}

// service is a running `queuectl run`: one scheduler and one engine whose
// lanes are the file's queues.
type service struct {
	a    *app
	o    *runOptions
	log  zerolog.Logger
	st   queue.Store
	dsn  string // the database, as its jobs' QUEUECTL_DB shows it (see jobDBEnv)
	file *config.File
	// started is the file the service started with: its database and
	// http block take effect only on a restart, so a reload compares them
	// with it, not with the file last applied.
	started *config.File
	eng     *queue.Engine
	sched   *scheduler.Scheduler

	// notifier tells systemd (Type=notify) when the service is ready,
	// reloading and stopping, and sends the watchdog's keep-alives.
	notifier *sdnotify.Notifier

	// Engines replaced by a reload finish their running jobs in the
	// background; stopDrains makes them stop those jobs (a second signal).
	// The pruner applying the file's retention block, when it has one.
	stopPruner context.CancelFunc
	pruned     sync.WaitGroup

	drains     sync.WaitGroup
	draining   drainingEngines // engines replaced by a reload, still finishing jobs
	drainCtx   context.Context
	stopDrains context.CancelFunc
}

func (a *app) runService(ctx context.Context, o *runOptions) error {
	// Catch signals before anything else: SIGHUP's default action would
	// kill a service that has not yet reached its loop. Stop signals have
	// a channel of their own: SIGHUPs that come while a reload runs merge
	// into one reload, and can never fill the buffer a SIGTERM needs.
	stops := make(chan os.Signal, 2)
	signal.Notify(stops, syscall.SIGINT, syscall.SIGTERM)
	defer signal.Stop(stops)
	hups := make(chan os.Signal, 1)
	signal.Notify(hups, syscall.SIGHUP)
	defer signal.Stop(hups)
	// Until the service works, a stop signal cancels its start, which
	// may wait long on a database that does not answer: caught above,
	// the signal would otherwise do nothing meanwhile.
	startCtx, started := cancelOnStop(ctx)
	defer started()
	log, err := a.logger(a.stderr)
	if err != nil {
		return err
	}
	if o.retry, err = retryPolicy(o.jitter); err != nil {
		return err
	}
	f, err := a.configFile()
	if err != nil {
		return err
	}
	dsn, err := a.createDSN()
	if err != nil {
		return err
	}
	st, err := openStore(startCtx, dsn)
	if err != nil {
		return stoppedAtStart(startCtx, log, err)
	}
	defer st.Close()
	defer logProcessStats(log, st) // what the service cost, as it exits
	// The dashboard and API (http block) listen before work starts, so a
	// busy port fails the service at once.
	httpCtx, stopHTTP := context.WithCancel(ctx)
	defer stopHTTP()
	if f.HTTP != nil {
		wait, err := a.startHTTP(httpCtx, log, st, httpOptions{listen: f.HTTP.Listen, tokenFile: f.HTTP.TokenFile,
			viewerTokenFile: f.HTTP.ViewerTokenFile, tokenSetting: "token_file in the http block"})
		if err != nil {
			return err
		}
		defer func() { stopHTTP(); wait() }()
	}
	s := &service{a: a, o: o, log: log, st: st, dsn: dsn, started: f, notifier: sdnotify.New(a.getenv, os.Getpid())}
	s.drainCtx, s.stopDrains = context.WithCancel(context.Background())
	defer s.stopDrains()
	overridden, err := s.apply(startCtx, f)
	if err != nil {
		return stoppedAtStart(startCtx, log, err)
	}
	s.logOverridden(overridden)
	s.sched = scheduler.New(st, scheduler.Config{Log: log})
	if err := s.sched.Start(ctx); err != nil {
		return err
	}
	started() // from here on, waitForStop handles the signals
	log.Info().Str("config", a.file.path).Str("database", redactDSN(dsn)).Int("queues", len(f.Queues)).Int("jobs", len(f.Jobs)).Msg("service started")
	s.notify(sdnotify.Ready)
	watchdog, stopWatchdog := context.WithCancel(ctx)
	defer stopWatchdog()
	go s.notifier.KeepAlive(watchdog, func(ctx context.Context) error {
		_, err := st.GetConfig(ctx) // a small read: the database answers
		return err
	}, func(err error) { log.Warn().Err(err).Msg("systemd watchdog") })

	s.waitForStop(stops, hups)
	return s.shutdown(stops)
}

// cancelOnStop returns a context that SIGINT or SIGTERM cancels, with
// the signal as its cause, until started is called.
func cancelOnStop(ctx context.Context) (_ context.Context, started func()) {
	stops := make(chan os.Signal, 1)
	signal.Notify(stops, syscall.SIGINT, syscall.SIGTERM)
	ctx, cancel := context.WithCancelCause(ctx)
	done := make(chan struct{})
	go func() {
		select {
		case sig := <-stops:
			cancel(fmt.Errorf("%s", sig))
		case <-done:
		}
	}()
	var once sync.Once
	return ctx, func() {
		once.Do(func() {
			signal.Stop(stops)
			close(done)
		})
	}
}

// stoppedAtStart turns a start that a stop signal cancelled into a clean
// stop; any other error is returned as it is.
func stoppedAtStart(ctx context.Context, log zerolog.Logger, err error) error {
	if ctx.Err() == nil {
		return err
	}
	log.Info().Str("signal", context.Cause(ctx).Error()).Msg("stopped before the service started")
	return nil
}

// shutdown stops the service after the first stop signal: no more fires
// or pruning, then the engines drain until --grace passes or a second
// signal comes, which stops the jobs still running.
func (s *service) shutdown(stops <-chan os.Signal) error {
	s.notify(sdnotify.Stopping)
	s.stopPruning()
	s.sched.Stop(context.Background())
	stopCtx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if s.o.grace > 0 {
		t := time.AfterFunc(s.o.grace, func() {
			s.log.Warn().Int64("grace_ms", s.o.grace.Milliseconds()).Msg("grace period over: stopping running jobs")
			cancel()
		})
		defer t.Stop()
	}
	go func() {
		select {
		case sig := <-stops:
			s.log.Warn().Str("signal", sig.String()).Msg("second signal: stopping running jobs")
			cancel()
		case <-stopCtx.Done():
		}
	}()
	// The second signal or the grace period reaches every engine, the
	// ones draining after a reload too; the store closes after all stop.
	go func() {
		<-stopCtx.Done()
		s.stopDrains()
	}()
	err := s.eng.Stop(stopCtx)
	s.drains.Wait()
	return err
}

// apply writes f to the store and (re)starts the engine when the queues
// changed; the old engine drains in the background. It returns the
// declared queues whose stored limits it replaced though the file did not
// change them: at a reload, limits a queue set changed at run time; at
// start, limits stored by a queue set or an earlier file (a queue only
// paused has none).
func (s *service) apply(ctx context.Context, f *config.File) (overridden []string, err error) {
	replaced, released, err := applyFile(ctx, s.st, f, s.file, s.a.now())
	if err != nil {
		return nil, err
	}
	if released != nil {
		s.log.Info().Strs("queues", released).Msg("limits of queues no longer declared released")
	}
	for _, c := range replaced {
		if s.file == nil && !c.Limited() || fileChangedLimits(s.file, f, c.Name) {
			continue
		}
		overridden = append(overridden, c.Name)
	}
	if s.file == nil || s.file.Retention != f.Retention {
		s.startPruning(f.Retention)
	}
	if s.file != nil && reflect.DeepEqual(lanes(s.file), lanes(f)) {
		s.file = f
		return overridden, nil
	}
	ls := lanes(f)
	old := s.eng
	// A replaced engine finishes its running jobs while the new one
	// starts: their slots count against the new lanes until those jobs
	// end, so a queue never runs more than its concurrency at once (one of
	// concurrency 1 stays serial across a reload). The new lanes claim
	// nothing until the old ones have stopped claiming.
	var ready atomic.Bool
	for i := range ls {
		q, slots := ls[i].Name, ls[i].Slots
		ls[i].Held = func() int {
			if !ready.Load() {
				return slots
			}
			return s.draining.busy(q)
		}
	}
	if old == nil {
		ready.Store(true)
	}
	eng := queue.NewEngine(s.st, shellRunner{executor.New(executor.Config{KillGrace: s.o.kill}), jobDBEnv(s.dsn)}, queue.EngineConfig{
		Lanes: ls, Lease: s.o.lease, Log: s.log, Retry: s.o.retry, Host: s.a.hostName(), Processes: proc.Host{},
		Service: true, // worker stop leaves it alone
	})
	if err := eng.Start(ctx); err != nil {
		return nil, err // the old engine keeps working
	}
	if old != nil {
		s.log.Info().Msg("queues changed: new worker slots started; the old ones finish their running jobs")
		// A claim of the old engine still in flight completes first; a
		// stop signal does not wait for one that hangs on the database.
		claiming := make(chan struct{})
		go func() { old.StopClaiming(); close(claiming) }()
		select {
		case <-claiming:
			// Counted only now: its own lanes, still claiming until
			// then, would have counted its jobs twice.
			s.draining.add(old)
			ready.Store(true)
			eng.Wake()
		case <-ctx.Done(): // stopping: the new engine never needs to claim
		}
		s.drains.Add(1)
		go func() {
			defer s.drains.Done()
			old.Stop(s.drainCtx)
			s.draining.remove(old) // its jobs have ended
		}()
	}
	s.eng, s.file = eng, f
	return overridden, nil
}

// drainingEngines are the engines reloads replaced that still finish
// their running jobs.
type drainingEngines struct {
	mu   sync.Mutex
	engs []*queue.Engine
}

func (d *drainingEngines) add(e *queue.Engine) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.engs = append(d.engs, e)
}

func (d *drainingEngines) remove(e *queue.Engine) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.engs = slices.DeleteFunc(d.engs, func(x *queue.Engine) bool { return x == e })
}

// busy counts the slots of queue q the draining engines hold.
func (d *drainingEngines) busy(q string) int {
	d.mu.Lock()
	defer d.mu.Unlock()
	n := 0
	for _, e := range d.engs {
		n += e.Busy(q)
	}
	return n
}
