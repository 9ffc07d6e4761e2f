package supervise

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/queuectl/queuectl/internal/duration"
	"github.com/queuectl/queuectl/internal/proc"
	"github.com/queuectl/queuectl/internal/view"
	"github.com/queuectl/queuectl/queue"
)

// StopParams says which workers Stop stops and where it reports.
type StopParams struct {
	Host     string        // this host's name, as workers registered it
	Timeout  time.Duration // after it, running jobs are stopped and put back (0: wait for them)
	AllHosts bool          // also ask other hosts' workers, through the store
	// Self is the worker running the job that runs this command
	// (QUEUECTL_WORKER), if any: it is asked to stop but not waited for,
	// since it waits for this job.
	Self string
	// KillGrace is the kill grace (--kill-grace) of a local worker whose
	// command line does not say: how long its running jobs have between
	// SIGTERM and SIGKILL once they are stopped.
	KillGrace time.Duration
	Now       func() time.Time // this host's clock (nil: time.Now)
	Stdout    io.Writer
	Stderr    io.Writer
}

// ExitWait is how long a local worker has, after the second signal and the
// kill grace of its jobs, to record them as interrupted and exit, before
// Stop kills it (SIGKILL), and how long a killed worker may take to go
// before Stop gives up on it.
const ExitWait = 5 * time.Second

// Stop asks this host's workers to stop (a signal: they drain) and, with
// AllHosts, the other hosts' workers (a stop request in the store), and
// waits until they are gone. After Timeout a second signal makes local
// workers stop their running jobs; one still alive its kill grace plus
// ExitWait later (hung, or stopped) is killed with SIGKILL, with every
// process of its jobs (KillByEnv: the jobs are then lost attempts, which
// the next worker rescues). Remote ones can only be waited for. It fails
// if a worker outlives its SIGKILL by ExitWait.
func Stop(ctx context.Context, st queue.Store, p StopParams) error {
	timeout, allHosts := p.Timeout, p.AllHosts
	now := p.Now
	if now == nil {
		now = time.Now
	}
	ws, err := st.ListWorkers(ctx)
	if err != nil {
		return err
	}
	host := p.Host
	boot := proc.BootID()
	var local []*queue.WorkerInfo
	var self *queue.WorkerInfo
	remote := map[string]bool{}
	services := 0
	for _, w := range ws {
		here := w.Host == host && w.BootID == boot
		switch {
		case w.Service:
			// A `queuectl run` service is stopped as a service is: its
			// scheduler and HTTP server go with it, and a clean exit would
			// not bring it back under Restart=on-failure.
			if here && proc.Alive(w.PID, w.ProcStart) || !here && allHosts {
				services++
			}
		case here && p.Self != "" && w.ID == p.Self:
			if proc.Alive(w.PID, w.ProcStart) {
				self = w
			}
		case here:
			if proc.Alive(w.PID, w.ProcStart) {
				local = append(local, w)
			}
		case allHosts:
			remote[w.ID] = true
		}
	}
	if services > 0 {
		fmt.Fprintf(p.Stderr, "leaving %d queuectl run service(s) running: stop a service with SIGTERM or its service manager\n", services)
	}
	if self != nil {
		if err := signalAll([]*queue.WorkerInfo{self}, syscall.SIGTERM); err != nil {
			return err
		}
		fmt.Fprintf(p.Stderr, "worker %d runs this command: it stops once this job ends\n", self.PID)
		if len(local) == 0 && len(remote) == 0 {
			return nil
		}
	}
	if len(local) == 0 && len(remote) == 0 {
		where := "on this host"
		if allHosts {
			where = "on any host"
		}
		fmt.Fprintln(p.Stdout, "no workers running", where)
		return nil
	}
	// Local workers get a signal, not the store's stop request, so that they
	// see exactly one request now and a second one only when --timeout
	// passes; remote ones can only be asked through the store.
	if err := signalAll(local, syscall.SIGTERM); err != nil {
		return err
	}
	if len(remote) > 0 {
		if err := st.RequestStop(ctx, slices.Collect(maps.Keys(remote))); err != nil {
			return err
		}
	}
	asked := len(local) + len(remote)
	var silent []string // remote workers not heard from: crashed, or cut off
	start := time.Now()
	var forced time.Time // when the second signal went
	// After the second signal, a local worker still alive at killAt is
	// killed (at killedAt); one that outlives that by ExitWait is given up
	// on, and the command fails naming it.
	killAt := make([]time.Time, len(local))
	killedAt := make([]time.Time, len(local))
	gaveUp := make([]bool, len(local))
	var unkillable []string
	lastList := time.Time{}
	for {
		alive := 0
		for i, w := range local {
			if gaveUp[i] || !proc.Alive(w.PID, w.ProcStart) {
				continue
			}
			switch {
			case !killedAt[i].IsZero() && time.Since(killedAt[i]) > ExitWait:
				gaveUp[i] = true
				unkillable = append(unkillable, strconv.Itoa(w.PID))
				fmt.Fprintf(p.Stderr, "worker %d still running %s after SIGKILL (stuck in the kernel?): giving up on it\n", w.PID, ExitWait)
				continue
			case killedAt[i].IsZero() && !forced.IsZero() && time.Now().After(killAt[i]):
				if err := kill(w, time.Since(forced), p.Stderr); err != nil {
					return err
				}
				killedAt[i] = time.Now()
			}
			alive++
		}
		if len(remote) > 0 && time.Since(lastList) > 250*time.Millisecond {
			gone, err := dropUnregistered(ctx, st, remote, now())
			if err != nil {
				return err
			}
			silent = append(silent, gone...)
			lastList = time.Now()
		}
		if alive == 0 && len(remote) == 0 {
			break
		}
		if alive == 0 && timeout > 0 && time.Since(start) > timeout {
			return fmt.Errorf("%d worker(s) on other hosts still running after %s: %s", len(remote), timeout,
				strings.Join(slices.Sorted(maps.Keys(remote)), ", "))
		}
		if timeout > 0 && forced.IsZero() && time.Since(start) > timeout {
			fmt.Fprintf(p.Stderr, "timeout: stopping the running jobs of %d worker(s); they will be retried\n", alive)
			signalAll(local, syscall.SIGTERM) // the second signal ends running jobs (the first reached them all)
			forced = time.Now()
			for i, w := range local {
				killAt[i] = forced.Add(killGrace(w.PID, p.KillGrace) + ExitWait)
			}
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(25 * time.Millisecond):
		}
	}
	if len(silent) > 0 {
		slices.Sort(silent)
		fmt.Fprintf(p.Stderr, "%d worker(s) on other hosts not heard from in %s, left registered (gone, or cut off from the database): %s\n",
			len(silent), view.WorkerAlive, strings.Join(silent, ", "))
	}
	fmt.Fprintf(p.Stdout, "stopped %d worker(s)\n", asked-len(silent)-len(unkillable))
	if len(unkillable) > 0 {
		return fmt.Errorf("%d worker(s) could not be stopped: %s", len(unkillable), strings.Join(unkillable, ", "))
	}
	return nil
}

// kill kills local worker w, which the second signal did not stop within
// since, and every process of its jobs, and says so on stderr. Its jobs
// stay in the store as its: the next worker to look rescues them as lost
// attempts. It fails only if w may not be signalled.
func kill(w *queue.WorkerInfo, since time.Duration, stderr io.Writer) error {
	if err := syscall.Kill(w.PID, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("kill worker %d: %w", w.PID, err)
	}
	jobs := "its running jobs are rescued as lost attempts by the next worker"
	// Its jobs run in process groups of their own, which outlive it.
	if n, err := proc.KillByEnv("QUEUECTL_WORKER=" + w.ID); err != nil {
		jobs = fmt.Sprintf("%s; its jobs' processes may be left: %v", jobs, err)
	} else if n > 0 {
		jobs = fmt.Sprintf("killed %d process(es) of its jobs; %s", n, jobs)
	}
	fmt.Fprintf(stderr, "killed worker %d (SIGKILL): still running %s after the second signal; %s\n",
		w.PID, since.Round(100*time.Millisecond), jobs)
	return nil
}

// killGrace is local worker pid's kill grace: its --kill-grace flag, else
// def (the flag's default, or when its command line cannot be read).
func killGrace(pid int, def time.Duration) time.Duration {
	args, err := proc.Args(pid)
	if err != nil {
		return def
	}
	d := def
	for i, a := range args {
		v, ok := strings.CutPrefix(a, "--kill-grace=")
		if !ok && a == "--kill-grace" && i+1 < len(args) {
			v, ok = args[i+1], true
		}
		if ok {
			if g, err := duration.Parse(v); err == nil && g > 0 {
				d = g // the last one counts, as for the flag
			}
		}
	}
	return d
}

// dropUnregistered removes from ids the workers no longer registered, and
// those not heard from (view.Heard, by HeartbeatNow), which it returns: a
// crashed worker stays registered until a live one unregisters it, and
// would be waited for forever.
func dropUnregistered(ctx context.Context, st queue.Store, ids map[string]bool, now time.Time) (silent []string, err error) {
	ws, err := st.ListWorkers(ctx)
	if err != nil {
		return nil, err
	}
	if now, err = HeartbeatNow(ctx, st, now); err != nil {
		return nil, err
	}
	still := map[string]bool{}
	for _, w := range ws {
		still[w.ID] = true
		if ids[w.ID] && !view.Heard(w, now) {
			silent = append(silent, w.ID)
			still[w.ID] = false
		}
	}
	for id := range ids {
		if !still[id] {
			delete(ids, id)
		}
	}
	return silent, nil
}

// signalAll sends sig to each worker still alive, and reports the first it
// may not signal (another user's), which would never stop.
func signalAll(ws []*queue.WorkerInfo, sig syscall.Signal) error {
	var first error
	for _, w := range ws {
		if proc.Alive(w.PID, w.ProcStart) {
			err := syscall.Kill(w.PID, sig)
			switch {
			case err == nil || errors.Is(err, syscall.ESRCH) || first != nil:
			case errors.Is(err, syscall.EPERM):
				first = fmt.Errorf("stop worker %d: %w (run as the user that started it)", w.PID, err)
			default:
				first = fmt.Errorf("stop worker %d: %w", w.PID, err)
			}
		}
	}
	return first
}
