package queue

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/rs/zerolog"
)

// rescuer sends the jobs of lost workers back through the retry path as
// lost attempts. Only the lease decides, with one exception, the same-host
// fast path: a worker registered with this host's name and boot id (the
// same process table) whose process is gone (pid and start time) is dead
// at once, and its jobs are rescued before their lease ends. A worker on
// another host, or on a host of the same name with another boot id (a
// cloned VM, a container), is judged by its leases alone; after two leases
// without a heartbeat it is unregistered. The rescuer kills what is left of
// a lost attempt on this host and unregisters dead workers.
type rescuer struct {
	store   Store
	clock   Clock
	me      WorkerInfo // this worker's identity: ID, Host, BootID
	lease   time.Duration
	every   time.Duration
	running *runningSet // this engine's own jobs, left alone while they run
	procs   Processes
	retry   RetryPolicy
	log     zerolog.Logger
	svc     service
	// hooks runs the outcome hooks of a rescued job (in the background:
	// a pass does not wait for them).
	hooks func(log zerolog.Logger, j *Job, f Finish)
}

// Start looks for lost jobs now and then every r.every. It is safe to call
// twice.
func (r *rescuer) Start() { r.svc.start(r.loop) }

// Stop stops looking and waits for a pass in flight. It is safe to call twice.
func (r *rescuer) Stop() { r.svc.stop() }

func (r *rescuer) loop(ctx context.Context) {
	repeat(ctx, 0, nil, func(ctx context.Context) time.Duration {
		// A pass that gets no answer (a connection whose packets are
		// dropped) is given up after a lease, so that the next passes
		// rescue what it would have.
		pctx, cancel := context.WithTimeout(ctx, r.lease)
		defer cancel()
		if _, err := r.rescueOnce(pctx); err != nil && ctx.Err() == nil {
			r.log.Warn().Err(err).Msg("rescue lost jobs")
		}
		return r.every
	})
}

// rescueOnce makes one pass and returns how many jobs it rescued.
func (r *rescuer) rescueOnce(ctx context.Context) (int, error) {
	now, err := r.now(ctx)
	if err != nil {
		return 0, err
	}
	workers, err := r.store.ListWorkers(ctx)
	if err != nil {
		return 0, fmt.Errorf("list workers: %w", err)
	}
	dead := map[string]bool{} // local workers whose process is gone: their jobs are lost now
	var gone []string         // workers to unregister: dead, or silent for two leases (and SilentAfter)
	for _, w := range workers {
		switch {
		case w.ID == r.me.ID:
		case r.local(w):
			if !r.procs.Alive(w.PID, w.ProcStart) {
				dead[w.ID] = true
				gone = append(gone, w.ID)
			}
		case now.Sub(w.HeartbeatAt) > max(2*r.lease, SilentAfter):
			// Its own lease may be longer than this worker's; it beats at
			// least every RegistrationBeat all the same.
			gone = append(gone, w.ID)
		}
	}
	cands, err := r.store.RescueCandidates(ctx, RescueParams{Now: now, Host: r.me.Host, BootID: r.me.BootID})
	if err != nil {
		return 0, fmt.Errorf("find lost jobs: %w", err)
	}
	var fs []Finish
	var lost []*Job
	for _, j := range cands {
		expired := !j.LeaseUntil.After(now)
		// A job whose worker is not in the snapshot may belong to a worker that
		// registered after it was taken: only lease expiry decides those.
		// This engine's own jobs are skipped only while it runs them: a
		// claim whose reply was lost (the connection dropped after the
		// commit) leaves a job under this worker that nothing renews.
		if (j.Worker == r.me.ID && r.running.has(j.ID)) || !(expired || dead[j.Worker]) {
			continue
		}
		if r.sameHost(workers, j.Worker) {
			killLeftovers(r.procs, r.log, j, "lost attempt")
		}
		reason := "worker lost: lease expired"
		if dead[j.Worker] {
			reason = "worker lost: process " + j.Worker + " is gone"
		}
		f := r.retry.Decide(j, j.Worker, End{
			Outcome: OutcomeLost, Error: reason, Started: j.StartedAt, Finished: now,
		}, now)
		if !dead[j.Worker] {
			f.LeaseExpiredBy = now // its worker may be alive: only an expired lease is taken
		}
		fs = append(fs, f)
		lost = append(lost, j)
	}
	applied, err := r.record(ctx, fs)
	if err != nil {
		return 0, err
	}
	n := 0
	for i, ok := range applied {
		if ok {
			n++
			if r.hooks != nil {
				go r.hooks(r.log.With().Str("job_id", lost[i].ID).Str("queue", lost[i].Queue).Int("attempt", lost[i].Attempts).Logger(), lost[i], fs[i])
			}
		}
	}
	for _, id := range gone {
		if err := r.store.UnregisterWorker(ctx, id); err != nil && !errors.Is(err, ErrNotFound) {
			return n, fmt.Errorf("unregister dead worker: %w", err)
		}
	}
	return n, nil
}

// now is the time leases and heartbeats are compared with: the database's
// when the store keeps leases on its own clock, else this worker's.
func (r *rescuer) now(ctx context.Context) (time.Time, error) {
	dc, ok := r.store.(DatabaseClock)
	if !ok {
		return r.clock.Now(), nil
	}
	now, err := dc.DatabaseNow(ctx)
	if err != nil {
		return time.Time{}, fmt.Errorf("read the database clock: %w", err)
	}
	return now, nil
}

// killLeftovers kills what is left on this host of j's current attempt,
// which ended as what says (a lost attempt, a stopped one): every process
// carrying its job id, attempt number and worker, with the process groups
// they lead, including those that left the attempt's process group
// (setsid). The worker tells the attempt from one of a job of the same id
// and number in another database served on the host.
func killLeftovers(procs Processes, log zerolog.Logger, j *Job, what string) {
	// An attempt started by a worker older than QUEUECTL_WORKER does not
	// carry it: its processes are matched by job and attempt alone.
	n, err := procs.KillByEnv("QUEUECTL_JOB_ID="+j.ID, "QUEUECTL_ATTEMPT="+strconv.Itoa(j.Attempts), "QUEUECTL_WORKER?="+j.Worker)
	if err != nil {
		log.Warn().Err(err).Str("job_id", j.ID).Msg("kill leftover processes of " + what)
	} else if n > 0 {
		log.Info().Str("job_id", j.ID).Int("processes", n).Msg("killed leftover processes of " + what)
	}
}

// record writes the rescued outcomes and reports which took effect (the
// job was still where the rescue found it).
func (r *rescuer) record(ctx context.Context, fs []Finish) ([]bool, error) {
	if len(fs) == 0 {
		return nil, nil
	}
	applied, err := r.store.FinishJobs(ctx, fs)
	if err != nil {
		return nil, fmt.Errorf("record lost jobs: %w", err)
	}
	for i, ok := range applied {
		if ok {
			r.log.Warn().Str("job_id", fs[i].JobID).Int("attempt", fs[i].Attempt).Str("state", string(fs[i].State)).
				Str("error", fs[i].Error).Msg("rescued lost job")
		}
	}
	return applied, nil
}

// sameHost reports whether worker id is registered on this host and boot,
// so that what is left of its attempts can be found here.
func (r *rescuer) sameHost(ws []*WorkerInfo, id string) bool {
	for _, w := range ws {
		if w.ID == id {
			return r.local(w)
		}
	}
	return false
}

// local reports whether w runs in this host's process table: the same host
// name and the same, known boot id. Only then do its pid and start time
// say anything about it; a host name alone can be shared by cloned VMs and
// containers.
func (r *rescuer) local(w *WorkerInfo) bool {
	return r.me.BootID != "" && w.Host == r.me.Host && w.BootID == r.me.BootID
}
