package supervise

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

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
	Self   string
	Now    func() time.Time // this host's clock (nil: time.Now)
	Stdout io.Writer
	Stderr io.Writer
}

// Stop asks this host's workers to stop (a signal: they drain) and, with
// AllHosts, the other hosts' workers (a stop request in the store), and
// waits until they are gone. After Timeout (at least secondSignalGap) a
// second signal makes local workers stop their running jobs; remote ones
// can only be waited for. A local worker that then stays alive without
// being heard from (its heartbeats stopped, so it is hung or stopped, not
// draining or running an outcome hook, which beat) is killed (killHung),
// on Linux; when the store cannot be read, it is waited for.
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
	forced := false
	lastList, lastHeard := time.Time{}, time.Time{}
	hung := hungWatch{beats: map[string]beat{}, after: view.WorkerAlive}
	for {
		alive := 0
		for _, w := range local {
			if proc.Alive(w.PID, w.ProcStart) {
				alive++
			}
		}
		if forced && alive > 0 && runtime.GOOS == "linux" && time.Since(lastHeard) > 250*time.Millisecond {
			if err := hung.killHung(ctx, st, local, p); err != nil && !hung.warned {
				// Killing is an extra: without the store, wait as before.
				fmt.Fprintf(p.Stderr, "cannot tell whether a worker is hung (%v): waiting for them\n", err)
				hung.warned = true
			}
			lastHeard = time.Now()
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
		if timeout > 0 && !forced && time.Since(start) > max(timeout, secondSignalGap) {
			fmt.Fprintf(p.Stderr, "timeout: stopping the running jobs of %d worker(s); they will be retried\n", alive)
			signalAll(local, syscall.SIGTERM) // the second signal ends running jobs (the first reached them all)
			forced = true
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
	fmt.Fprintf(p.Stdout, "stopped %d worker(s)\n", asked-len(silent))
	return nil
}

// secondSignalGap is the least time between the first signal and the
// second: two SIGTERMs sent closer may reach a worker as one (the kernel
// keeps one pending signal of a kind), which would only drain.
const secondSignalGap = 250 * time.Millisecond

// hungWatch tells hung local workers from live ones after the second
// signal: a worker is hung when its heartbeat has not moved for
// view.WorkerAlive of this process's monotonic time, watched from the
// second signal on, and it is not heard from by the database's clock (so
// neither a clock step nor a heartbeat from before the watch decides).
type hungWatch struct {
	beats  map[string]beat // by worker id: its last heartbeat, and since when it has not moved
	after  time.Duration   // how long a heartbeat stays put before its worker is hung
	warned bool            // a failed check was reported
}

type beat struct {
	at    time.Time
	since time.Time
}

// killHung kills, with SIGKILL, each of the local workers still alive that
// is hung (hungWatch), and the processes of its running attempts: those
// carrying the job's id, the attempt's number and the worker's id, as a
// rescue finds an attempt's leftovers (not the daemons its finished jobs
// left on purpose, nor services started from a job). Its jobs stay in the
// store as its: the next worker to look rescues them as lost attempts, at
// once, since its process is gone.
func (h *hungWatch) killHung(ctx context.Context, st queue.Store, local []*queue.WorkerInfo, p StopParams) error {
	ws, err := st.ListWorkers(ctx)
	if err != nil {
		return err
	}
	now := time.Now()
	if p.Now != nil {
		now = p.Now()
	}
	if now, err = HeartbeatNow(ctx, st, now); err != nil {
		return err
	}
	registered := map[string]*queue.WorkerInfo{}
	for _, w := range ws {
		registered[w.ID] = w
	}
	for _, w := range local {
		r := registered[w.ID]
		if r == nil || !proc.Alive(w.PID, w.ProcStart) {
			continue // unregistered (exiting), or gone
		}
		b, seen := h.beats[w.ID]
		if !seen || !b.at.Equal(r.HeartbeatAt) {
			h.beats[w.ID] = beat{at: r.HeartbeatAt, since: time.Now()}
			continue
		}
		if view.Heard(r, now) || time.Since(b.since) < h.after {
			continue
		}
		jobs, err := st.RescueCandidates(ctx, queue.RescueParams{Now: now, Host: w.Host, BootID: w.BootID})
		if err != nil {
			return err
		}
		if !proc.Alive(w.PID, w.ProcStart) { // gone meanwhile: its pid may be another process's now
			continue
		}
		if err := syscall.Kill(w.PID, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
			return fmt.Errorf("kill worker %d: %w", w.PID, err)
		}
		n := 0
		for _, j := range jobs {
			if j.Worker != w.ID {
				continue
			}
			k, err := proc.KillByEnv("QUEUECTL_JOB_ID="+j.ID, "QUEUECTL_ATTEMPT="+strconv.Itoa(j.Attempts), "QUEUECTL_WORKER="+w.ID)
			if err != nil {
				fmt.Fprintf(p.Stderr, "kill the processes of job %s: %v\n", j.ID, err)
			}
			n += k
		}
		fmt.Fprintf(p.Stderr, "killed worker %d (SIGKILL): alive after the second signal but not heard from in %s (hung, or stopped); "+
			"killed %d process(es) of its running jobs, which the next worker rescues as lost attempts\n", w.PID, view.WorkerAlive, n)
	}
	return nil
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
