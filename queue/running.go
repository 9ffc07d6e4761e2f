package queue

import (
	"context"
	"sync"
	"time"

	"github.com/rs/zerolog"
)

// outcomeFenced is the internal reason for stopping an attempt whose lease
// this worker could not renew in time. It is never recorded: the worker
// gives the job up, and only the rescuer of whoever holds the lease decides.
const outcomeFenced Outcome = "fenced"

// fenceAfter is how long after the last renewal was sent a running job is
// stopped when no renewal succeeds since: three quarters of the lease, so
// that renewals every third of it can fail once and the last quarter is
// left for the process group to die before another worker may rescue it.
func fenceAfter(lease time.Duration) time.Duration { return lease - lease/4 }

// fenceStop is the cause a fenced attempt is cancelled with. A runner that
// stops the process group with a grace between SIGTERM and SIGKILL (the
// executor, through context.Cause) uses KillGrace when it is shorter than
// its own: half the last quarter of the lease, so that the group is gone
// before the lease ends whatever kill grace the worker was given.
type fenceStop struct{ lease time.Duration }

func (f fenceStop) Error() string            { return "lease not renewed in time" }
func (f fenceStop) KillGrace() time.Duration { return f.lease / 8 }

// runningJob is one attempt this engine runs, with the reason it was asked
// to stop, if it was, and its fence: a timer on this process's monotonic
// clock that stops the attempt when its lease was not renewed in time.
// Once its command has ended (ended) it stays in the running set until its
// outcome is recorded, but there is nothing left to stop: a lost lease or
// a cancel request is then settled by the recording.
type runningJob struct {
	job    *Job
	cancel context.CancelCauseFunc
	mu     sync.Mutex
	reason Outcome
	ended  bool
	fence  *time.Timer
}

// renewed moves the fence: a renewal sent at sent succeeded. Once the
// command has ended (end stopped the fence) a renewal sent while the
// outcome waits for its batch must not start it again, or it would fire
// after the job was recorded and give up a job already done.
func (r *runningJob) renewed(sent time.Time, lease time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.reason == "" && !r.ended && r.fence != nil {
		r.fence.Reset(time.Until(sent.Add(fenceAfter(lease))))
	}
}

// stop asks the attempt to stop for reason, unless its command has ended;
// it reports whether the command was still running.
func (r *runningJob) stop(reason Outcome) bool {
	r.mu.Lock()
	if r.ended {
		r.mu.Unlock()
		return false
	}
	if r.reason == "" {
		r.reason = reason
	}
	r.mu.Unlock()
	r.cancel(nil)
	return true
}

// giveUp stops the attempt as fenced (its lease was not renewed in time)
// unless it was already asked to stop; it reports whether it did. Unlike
// stop it applies after the command ended too: the lease may have passed
// to another worker, so the outcome must not be recorded.
func (r *runningJob) giveUp(lease time.Duration) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.reason != "" {
		return false
	}
	r.reason = outcomeFenced
	if !r.ended {
		r.cancel(fenceStop{lease})
	}
	return true
}

// running reports whether the attempt's command has not ended yet.
func (r *runningJob) running() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return !r.ended
}

// end marks the attempt's command as ended and stops its fence for good
// (renewed no longer moves it): later stops leave the attempt alone; only
// a fence that fired before end can still give it up.
func (r *runningJob) end() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.ended = true
	if r.fence != nil {
		r.fence.Stop()
	}
}

func (r *runningJob) why() Outcome {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.reason
}

// runningSet is the attempts whose commands run now: lanes add to it, the
// lease keeper renews and stops its members, the rescuer leaves them alone,
// and shutdown interrupts them.
type runningSet struct {
	mu   sync.Mutex
	jobs map[string]*runningJob
}

func newRunningSet() *runningSet { return &runningSet{jobs: map[string]*runningJob{}} }

func (s *runningSet) add(r *runningJob) {
	s.mu.Lock()
	s.jobs[r.job.ID] = r
	s.mu.Unlock()
}

func (s *runningSet) remove(id string) {
	s.mu.Lock()
	delete(s.jobs, id)
	s.mu.Unlock()
}

func (s *runningSet) has(id string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.jobs[id] != nil
}

func (s *runningSet) ids() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	ids := make([]string, 0, len(s.jobs))
	for id := range s.jobs {
		ids = append(ids, id)
	}
	return ids
}

// stop asks the named attempts to stop for reason, calling found for each
// one whose command still runs. A heartbeat sent while an ended attempt's
// outcome was being recorded finds its lease gone (the outcome took it);
// that attempt is not lost, and found is not called for it.
func (s *runningSet) stop(ids []string, reason Outcome, found func(id string)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, id := range ids {
		if r := s.jobs[id]; r != nil && r.stop(reason) {
			found(id)
		}
	}
}

// renewed moves the fences of ids: their leases were renewed by a
// heartbeat sent at sent.
func (s *runningSet) renewed(ids []string, sent time.Time, lease time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, id := range ids {
		if r := s.jobs[id]; r != nil {
			r.renewed(sent, lease)
		}
	}
}

// stopAll asks every running attempt to stop for reason and reports how
// many commands were still running.
func (s *runningSet) stopAll(reason Outcome) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, r := range s.jobs {
		if r.stop(reason) {
			n++
		}
	}
	return n
}

// launch runs j in its own goroutine. leaseFrom is when the claim that
// took j's lease was sent, on this process's monotonic clock: j's fence
// starts there. free, if not nil, is called once j's slot may take another
// job: when its command has ended and its outcome is queued for recording
// (see attempt), at the latest when done would be. done, if not nil, is
// called when its outcome is recorded and its hooks have run.
func (e *Engine) launch(j *Job, leaseFrom time.Time, free, done func()) {
	ctx, cancel := context.WithCancelCause(e.jobCtx)
	r := &runningJob{job: j, cancel: cancel}
	r.mu.Lock()
	r.fence = time.AfterFunc(time.Until(leaseFrom.Add(fenceAfter(e.cfg.Lease))), func() {
		if r.giveUp(e.cfg.Lease) {
			e.log.Warn().Str("job_id", j.ID).Int("attempt", j.Attempts).
				Msg("lease not renewed in time; stopping the job and giving it up")
			// What left the process group (setsid) goes when the group's
			// SIGKILL is due, not only once the runner returns: the runner
			// may wait for such a process to let go of the output pipe
			// (the executor's WaitDelay), past the end of a short lease.
			time.AfterFunc(fenceStop{e.cfg.Lease}.KillGrace(), func() {
				if r.running() {
					killLeftovers(e.cfg.Processes, e.log, j, "fenced attempt")
				}
			})
		}
	})
	r.mu.Unlock()
	e.running.add(r)
	e.jobs.Add(1)
	release := func() {}
	if free != nil {
		release = sync.OnceFunc(free)
	}
	go func() {
		defer e.jobs.Done()
		if done != nil {
			defer done()
		}
		defer release()
		defer cancel(nil)
		e.runJob(ctx, r, release)
	}()
}

func (e *Engine) runJob(ctx context.Context, r *runningJob, release func()) {
	j := r.job
	log := e.log.With().Str("job_id", j.ID).Str("queue", j.Queue).Int("attempt", j.Attempts).Logger()
	if f, recorded := e.attempt(ctx, r, log, release); recorded {
		// After the job left the running set: its lease is no longer
		// renewed, nor can a stop of running jobs reach the hook.
		e.runHooks(log, j, f)
	}
}

// attempt runs one attempt of r's job and records its outcome; recorded
// says whether the outcome f took effect. Once the command has ended it
// calls release, so that the job's slot takes the next job while the
// outcome waits for its batch (the claim of the next jobs and the
// recording of these overlap), unless the job has hooks to run after the
// recording (they run in its slot) or the engine already has
// outcomesPerSlot outcomes per slot waiting (then the slot waits, which
// bounds the jobs a worker holds).
func (e *Engine) attempt(ctx context.Context, r *runningJob, log zerolog.Logger, release func()) (f Finish, recorded bool) {
	j := r.job
	log.Debug().Msg("job started")
	live := e.newLiveSaver(j, log)
	res := e.runner.Run(ctx, RunSpec{Command: j.Command, Env: j.Environ(), Dir: j.Dir, Timeout: j.Timeout, Live: live.watch})
	r.end()
	if res.TimedOut || res.Canceled {
		// A stopped attempt (timeout, cancel, fence, shutdown) leaves
		// nothing running: the runner stopped its process group, and what
		// left the group goes as a lost attempt's leftovers do. (An attempt
		// that ends on its own may leave a daemon started with setsid.)
		killLeftovers(e.cfg.Processes, log, j, "stopped attempt")
	}
	live.stop()
	// The job stays in the running set until its outcome is recorded, so
	// that this engine's rescuer cannot take a finished job for lost.
	defer e.running.remove(j.ID)
	if r.why() == outcomeFenced {
		// Its lease may have passed to another worker: recording anything
		// could overwrite that worker's attempt.
		log.Warn().Msg("job given up after its lease could not be renewed; no outcome recorded")
		return f, false
	}
	if j.Hooks.IsZero() && e.waiting.take() {
		defer e.waiting.give()
		release()
	}
	return e.record(log, j, end(res, r.why(), j.Timeout))
}

// record stores the outcome of an attempt this engine ran.
func (e *Engine) record(log zerolog.Logger, j *Job, end End) (Finish, bool) {
	f := e.cfg.Retry.Decide(j, e.me.ID, end, e.cfg.Clock.Now())
	applied, err := e.finish.finish(f)
	ev := log.Info()
	if end.Outcome != OutcomeSucceeded {
		ev = log.Warn().Str("error", end.Error)
	}
	if end.ExitCode != nil {
		ev = ev.Int("exit_code", *end.ExitCode)
	}
	ev = ev.Str("outcome", string(end.Outcome)).Str("state", string(f.State)).
		Int64("duration_ms", end.Finished.Sub(end.Started).Milliseconds())
	switch {
	case err != nil:
		log.Error().Err(err).Msg("record outcome failed; the job will be rescued and run again")
	case !applied:
		log.Warn().Str("outcome", string(end.Outcome)).Msg("lease lost before the outcome was recorded; another worker owns the job")
	case f.State == StateFailed:
		ev.Time("retry_at", f.RunAt).Msg("job failed; will retry")
	default:
		ev.Msg("job finished")
	}
	return f, err == nil && applied
}

// quota is a count with a ceiling (its capacity) that is never waited for:
// take fails when it is reached.
type quota chan struct{}

func (q quota) take() bool {
	select {
	case q <- struct{}{}:
		return true
	default:
		return false
	}
}

func (q quota) give() { <-q }
