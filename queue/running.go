package queue

import (
	"context"
	"sync"

	"github.com/rs/zerolog"
)

// runningJob is one attempt this engine runs, with the reason it was asked
// to stop, if it was.
type runningJob struct {
	job    *Job
	cancel context.CancelFunc
	mu     sync.Mutex
	reason Outcome
}

func (r *runningJob) stop(reason Outcome) {
	r.mu.Lock()
	if r.reason == "" {
		r.reason = reason
	}
	r.mu.Unlock()
	r.cancel()
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
// one still running.
func (s *runningSet) stop(ids []string, reason Outcome, found func(id string)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, id := range ids {
		if r := s.jobs[id]; r != nil {
			found(id)
			r.stop(reason)
		}
	}
}

// stopAll asks every running attempt to stop for reason and reports how
// many there were.
func (s *runningSet) stopAll(reason Outcome) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, r := range s.jobs {
		r.stop(reason)
	}
	return len(s.jobs)
}

// launch runs j in its own goroutine and calls done when its outcome is recorded.
func (e *Engine) launch(j *Job, done func()) {
	ctx, cancel := context.WithCancel(e.jobCtx)
	r := &runningJob{job: j, cancel: cancel}
	e.running.add(r)
	e.jobs.Add(1)
	go func() {
		defer e.jobs.Done()
		defer done()
		defer cancel()
		e.runJob(ctx, r)
	}()
}

func (e *Engine) runJob(ctx context.Context, r *runningJob) {
	j := r.job
	log := e.log.With().Str("job_id", j.ID).Str("queue", j.Queue).Int("attempt", j.Attempts).Logger()
	log.Debug().Msg("job started")
	res := e.runner.Run(ctx, RunSpec{Command: j.Command, Env: j.Environ(), Dir: j.Dir, Timeout: j.Timeout})
	// Off the running set, heartbeats no longer renew or report the job
	// while its outcome is recorded.
	e.running.remove(j.ID)
	e.record(log, j, end(res, r.why(), j.Timeout))
}

// record stores the outcome of an attempt this engine ran.
func (e *Engine) record(log zerolog.Logger, j *Job, end End) {
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
}
