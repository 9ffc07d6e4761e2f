package queue

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"sync"
	"time"

	"github.com/queuectl/queuectl/internal/proc"
	"github.com/rs/zerolog"
)

// Clock tells the time; tests inject a fake one.
type Clock interface{ Now() time.Time }

type systemClock struct{}

func (systemClock) Now() time.Time { return time.Now().UTC() }

// SystemClock returns the wall clock, in UTC.
func SystemClock() Clock { return systemClock{} }

// Lane is a set of worker slots that claim from the same queues.
type Lane struct {
	Name   string   // for logs; defaults to the queue list
	Queues []string // empty: every queue
	Slots  int      // jobs run at once; at least 1
}

// EngineConfig configures an Engine. Zero values take the defaults noted.
type EngineConfig struct {
	WorkerID   string        // default: host:pid:random
	Host       string        // this host's name; default os.Hostname
	Lanes      []Lane        // default: one lane, every queue, one slot
	Lease      time.Duration // default 30s; renewed every Lease/3
	Poll       time.Duration // fallback poll when idle; default 2s
	Rescue     time.Duration // how often to look for lost jobs; default 2s
	CancelPoll time.Duration // how often busy workers look for cancel requests; default 1s
	Retry      RetryPolicy
	Clock      Clock
	Log        zerolog.Logger
}

func (c *EngineConfig) defaults() {
	if c.Lease <= 0 {
		c.Lease = 30 * time.Second
	}
	if c.Poll <= 0 {
		c.Poll = 2 * time.Second
	}
	if c.Rescue <= 0 {
		c.Rescue = 2 * time.Second
	}
	if c.CancelPoll <= 0 {
		c.CancelPoll = time.Second
	}
	if c.Clock == nil {
		c.Clock = SystemClock()
	}
	if len(c.Lanes) == 0 {
		c.Lanes = []Lane{{Slots: 1}}
	}
	for i := range c.Lanes {
		if c.Lanes[i].Slots < 1 {
			c.Lanes[i].Slots = 1
		}
		if c.Lanes[i].Name == "" {
			c.Lanes[i].Name = laneName(c.Lanes[i].Queues)
		}
	}
}

func laneName(queues []string) string {
	if len(queues) == 0 {
		return "*"
	}
	s := queues[0]
	for _, q := range queues[1:] {
		s += "," + q
	}
	return s
}

// Engine is one worker process's job loop: it claims jobs, runs them through
// a Runner while renewing their leases, records outcomes with their history,
// rescues jobs of dead workers, and stops in two phases.
type Engine struct {
	store  Store
	runner Runner
	cfg    EngineConfig
	log    zerolog.Logger
	me     WorkerInfo

	claimCtx    context.Context // ends at phase 1 of Stop
	stopClaims  context.CancelFunc
	jobCtx      context.Context // ends at phase 2 of Stop
	stopJobs    context.CancelFunc
	loops       sync.WaitGroup // lane loops
	jobs        sync.WaitGroup // running jobs
	background  sync.WaitGroup // heartbeat, rescue, wake fan-out
	stopBg      context.CancelFunc
	stopAsked   chan struct{}
	stopAskOnce sync.Once
	startOnce   sync.Once
	startErr    error
	stopOnce    sync.Once
	stopErr     error

	finish *finisher

	mu      sync.Mutex
	running map[string]*runningJob
	wakes   []chan struct{} // one per lane, plus the heartbeat's
}

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

// NewEngine returns an engine that has not started.
func NewEngine(store Store, runner Runner, cfg EngineConfig) *Engine {
	cfg.defaults()
	host := cfg.Host
	if host == "" {
		host, _ = os.Hostname()
	}
	pid := os.Getpid()
	start, _ := proc.StartTime(pid)
	if cfg.WorkerID == "" {
		cfg.WorkerID = fmt.Sprintf("%s:%d:%04x", host, pid, rand.Uint32()&0xffff)
	}
	var queues []string
	for _, l := range cfg.Lanes {
		queues = append(queues, l.Queues...)
	}
	e := &Engine{
		store: store, runner: runner, cfg: cfg,
		log:       cfg.Log.With().Str("worker", cfg.WorkerID).Logger(),
		me:        WorkerInfo{ID: cfg.WorkerID, PID: pid, Host: host, BootID: proc.BootID(), ProcStart: start, Queues: queues},
		running:   map[string]*runningJob{},
		stopAsked: make(chan struct{}),
	}
	e.claimCtx, e.stopClaims = context.WithCancel(context.Background())
	e.jobCtx, e.stopJobs = context.WithCancel(context.Background())
	e.finish = newFinisher(store, func(err error, try int) {
		e.log.Warn().Err(err).Int("try", try).Msg("record outcomes")
	})
	return e
}

// ID is the worker id the engine registers under.
func (e *Engine) ID() string { return e.cfg.WorkerID }

// StopRequested is closed when the store asked this worker to stop
// (queuectl worker stop); the owner should then call Stop.
func (e *Engine) StopRequested() <-chan struct{} { return e.stopAsked }

// Start registers the worker and starts claiming. It is safe to call twice;
// a second call returns the first one's result.
func (e *Engine) Start(ctx context.Context) error {
	e.startOnce.Do(func() { e.startErr = e.start(ctx) })
	return e.startErr
}

func (e *Engine) start(ctx context.Context) error {
	now := e.cfg.Clock.Now()
	e.me.StartedAt, e.me.HeartbeatAt = now, now
	if err := e.store.RegisterWorker(ctx, &e.me); err != nil {
		return fmt.Errorf("register worker: %w", err)
	}
	bg, cancel := context.WithCancel(context.Background())
	wake, err := e.store.Wakeups(bg)
	if err != nil {
		cancel()
		return fmt.Errorf("subscribe to wake-ups: %w", err)
	}
	e.stopBg = cancel
	hbWake := e.addWake()
	laneWakes := make([]chan struct{}, len(e.cfg.Lanes))
	for i := range e.cfg.Lanes {
		laneWakes[i] = e.addWake()
	}
	e.background.Add(3)
	go e.fanOut(wake)
	go e.heartbeatLoop(bg, hbWake)
	go e.rescueLoop(bg)
	for i, l := range e.cfg.Lanes {
		e.loops.Add(1)
		go e.laneLoop(l, laneWakes[i])
	}
	e.log.Info().Int("pid", e.me.PID).Str("host", e.me.Host).Strs("queues", e.me.Queues).Msg("worker started")
	return nil
}

func (e *Engine) addWake() chan struct{} {
	c := make(chan struct{}, 1)
	e.wakes = append(e.wakes, c)
	return c
}

func (e *Engine) fanOut(wake <-chan struct{}) {
	defer e.background.Done()
	for range wake {
		e.wakeAll()
	}
}

func (e *Engine) wakeAll() {
	for _, c := range e.wakes {
		poke(c)
	}
}

func poke(c chan struct{}) {
	select {
	case c <- struct{}{}:
	default:
	}
}

// Stop shuts the engine down in two phases: it stops claiming and waits for
// running jobs to finish; when ctx ends first (a grace period, a second
// signal) it stops the running jobs' process groups and puts those jobs
// back as pending without charging the attempt. Safe to call twice.
func (e *Engine) Stop(ctx context.Context) error {
	e.stopOnce.Do(func() {
		e.stopClaims()
		e.loops.Wait()
		done := make(chan struct{})
		go func() { e.jobs.Wait(); close(done) }()
		select {
		case <-done:
		case <-ctx.Done():
			e.mu.Lock()
			n := len(e.running)
			for _, r := range e.running {
				r.stop(OutcomeInterrupted)
			}
			e.mu.Unlock()
			e.log.Warn().Int("jobs", n).Msg("stopping running jobs; they will be retried")
			<-done
		}
		e.finish.close()
		if e.stopBg != nil {
			e.stopBg()
		}
		e.background.Wait()
		// Unregister even when the caller's ctx has ended.
		uctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := e.store.UnregisterWorker(uctx, e.me.ID); err != nil {
			e.stopErr = fmt.Errorf("unregister worker: %w", err)
		}
		e.log.Info().Msg("worker stopped")
	})
	return e.stopErr
}

func (e *Engine) laneLoop(l Lane, wake chan struct{}) {
	defer e.loops.Done()
	log := e.log.With().Str("lane", l.Name).Logger()
	freed := make(chan struct{}, 1)
	var busy int
	var mu sync.Mutex
	timer := time.NewTimer(0)
	defer timer.Stop()
	failures := 0
	for {
		if e.claimCtx.Err() != nil {
			return
		}
		mu.Lock()
		free := l.Slots - busy
		mu.Unlock()
		wait := e.cfg.Poll
		if free > 0 {
			jobs, err := e.claim(l, free)
			switch {
			case err != nil && e.claimCtx.Err() != nil:
				return
			case err != nil:
				failures++
				wait = retryDelay(failures)
				log.Error().Err(err).Dur("retry_in", wait).Msg("claim jobs")
			default:
				failures = 0
				for _, j := range jobs {
					mu.Lock()
					busy++
					mu.Unlock()
					e.launch(j, func() {
						mu.Lock()
						busy--
						mu.Unlock()
						poke(freed)
					})
				}
				if len(jobs) == free {
					continue // look again once a slot frees up
				}
				wait = e.untilNextRun(l)
			}
		}
		resetTimer(timer, wait)
		select {
		case <-e.claimCtx.Done():
			return
		case <-freed:
			e.gatherFreeSlots(l.Slots, freed, func() (int, int) {
				mu.Lock()
				defer mu.Unlock()
				return l.Slots - busy, busy
			})
		case <-wake:
		case <-timer.C:
		}
	}
}

// batchWait bounds how long a lane waits for more slots to free up before
// it claims, so that one claim serves several slots.
const batchWait = time.Millisecond

// gatherFreeSlots waits, at most batchWait, until half the lane's slots are
// free (or none is busy), so that slots freed in a burst are refilled by
// one claim instead of one claim each. A one-slot lane never waits.
func (e *Engine) gatherFreeSlots(slots int, freed chan struct{}, state func() (free, busy int)) {
	want := (slots + 1) / 2
	if free, busy := state(); free >= want || busy == 0 {
		return
	}
	t := time.NewTimer(batchWait)
	defer t.Stop()
	for {
		select {
		case <-freed:
			if free, busy := state(); free >= want || busy == 0 {
				return
			}
		case <-t.C:
			return
		case <-e.claimCtx.Done():
			return
		}
	}
}

// retryDelay backs off store errors: 100ms, 200ms … up to 5s.
func retryDelay(failures int) time.Duration {
	d := 100 * time.Millisecond << min(failures-1, 6)
	return min(d, 5*time.Second)
}

func resetTimer(t *time.Timer, d time.Duration) {
	t.Stop()
	select {
	case <-t.C:
	default:
	}
	t.Reset(d)
}

// untilNextRun is how long an idle lane may sleep: until the earliest
// future run_at, but no longer than the poll interval.
func (e *Engine) untilNextRun(l Lane) time.Duration {
	next, err := e.store.NextRunAt(e.claimCtx, l.Queues)
	if err != nil || next.IsZero() {
		return e.cfg.Poll
	}
	d := next.Sub(e.cfg.Clock.Now()) + time.Millisecond
	return max(min(d, e.cfg.Poll), time.Millisecond)
}

func (e *Engine) claim(l Lane, n int) ([]*Job, error) {
	if err := e.claimCtx.Err(); err != nil {
		return nil, err
	}
	// Once sent, a claim is not cancelled by Stop: a claim that commits on
	// the server while its reply is abandoned would leave jobs processing
	// under this worker, to be charged a lost attempt later.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(e.claimCtx), 30*time.Second)
	defer cancel()
	now := e.cfg.Clock.Now()
	jobs, err := e.store.ClaimJobs(ctx, ClaimParams{
		Worker: e.me.ID, Queues: l.Queues, Limit: n, Now: now, LeaseUntil: now.Add(e.cfg.Lease),
	})
	if err != nil {
		return nil, fmt.Errorf("claim jobs: %w", err)
	}
	return jobs, nil
}

// launch runs j in its own goroutine and calls done when its outcome is recorded.
func (e *Engine) launch(j *Job, done func()) {
	ctx, cancel := context.WithCancel(e.jobCtx)
	r := &runningJob{job: j, cancel: cancel}
	e.mu.Lock()
	e.running[j.ID] = r
	e.mu.Unlock()
	e.jobs.Add(1)
	go func() {
		defer e.jobs.Done()
		defer done()
		defer cancel()
		e.runJob(ctx, r)
	}()
}

// ended takes a job whose command has ended off the running set, so that
// heartbeats no longer renew or report it while its outcome is recorded.
func (e *Engine) ended(id string) {
	e.mu.Lock()
	delete(e.running, id)
	e.mu.Unlock()
}

func (e *Engine) runJob(ctx context.Context, r *runningJob) {
	j := r.job
	log := e.log.With().Str("job_id", j.ID).Str("queue", j.Queue).Int("attempt", j.Attempts).Logger()
	log.Debug().Msg("job started")
	res := e.runner.Run(ctx, RunSpec{Command: j.Command, Env: j.Environ(), Dir: j.Dir, Timeout: j.Timeout})
	e.ended(j.ID)
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

func (e *Engine) heartbeatLoop(ctx context.Context, wake chan struct{}) {
	defer e.background.Done()
	every := e.cfg.Lease / 3
	last := e.cfg.Clock.Now()
	t := time.NewTimer(e.cfg.CancelPoll)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-wake:
		}
		ids := e.runningIDs()
		// Idle workers renew only their registration, every Lease/3; busy
		// ones also look for cancel requests every CancelPoll.
		if now := e.cfg.Clock.Now(); len(ids) > 0 || now.Sub(last) >= every {
			if err := e.heartbeat(ctx, ids); err != nil && ctx.Err() == nil {
				e.log.Warn().Err(err).Msg("heartbeat")
			} else {
				last = now
			}
		}
		resetTimer(t, e.cfg.CancelPoll)
	}
}

func (e *Engine) isRunning(id string) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.running[id] != nil
}

func (e *Engine) runningIDs() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	ids := make([]string, 0, len(e.running))
	for id := range e.running {
		ids = append(ids, id)
	}
	return ids
}

func (e *Engine) heartbeat(ctx context.Context, ids []string) error {
	now := e.cfg.Clock.Now()
	p := HeartbeatParams{Worker: e.me.ID, Jobs: ids, Now: now, LeaseUntil: now.Add(e.cfg.Lease)}
	res, err := e.store.Heartbeat(ctx, p)
	if errors.Is(err, ErrNotFound) {
		// Another process took this worker for dead (a long pause or a
		// network cut); register again and carry on with what we still hold.
		e.log.Warn().Msg("worker registration was removed; registering again")
		e.me.HeartbeatAt = now
		if err = e.store.RegisterWorker(ctx, &e.me); err == nil {
			res, err = e.store.Heartbeat(ctx, p)
		}
	}
	if err != nil {
		return fmt.Errorf("heartbeat: %w", err)
	}
	e.mu.Lock()
	for _, id := range res.Lost {
		if r := e.running[id]; r != nil {
			e.log.Warn().Str("job_id", id).Msg("lease lost; stopping the job")
			r.stop(OutcomeLost)
		}
	}
	for _, id := range res.Cancel {
		if r := e.running[id]; r != nil {
			e.log.Info().Str("job_id", id).Msg("cancel requested; stopping the job")
			r.stop(OutcomeCancelled)
		}
	}
	e.mu.Unlock()
	if res.StopRequested {
		e.stopAskOnce.Do(func() { close(e.stopAsked) })
	}
	return nil
}

func (e *Engine) rescueLoop(ctx context.Context) {
	defer e.background.Done()
	t := time.NewTimer(0)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if _, err := e.RescueOnce(ctx); err != nil && ctx.Err() == nil {
			e.log.Warn().Err(err).Msg("rescue lost jobs")
		}
		resetTimer(t, e.cfg.Rescue)
	}
}

// RescueOnce sends jobs of dead workers back through the retry path as lost
// attempts, after killing what is left of their process groups on this
// host. It also unregisters dead workers. It returns how many jobs it rescued.
func (e *Engine) RescueOnce(ctx context.Context) (int, error) {
	now := e.cfg.Clock.Now()
	workers, err := e.store.ListWorkers(ctx)
	if err != nil {
		return 0, fmt.Errorf("list workers: %w", err)
	}
	dead := map[string]bool{}
	for _, w := range workers {
		if w.ID != e.me.ID && e.workerGone(w, now) {
			dead[w.ID] = true
		}
	}
	cands, err := e.store.RescueCandidates(ctx, RescueParams{Now: now, Host: e.me.Host, BootID: e.me.BootID})
	if err != nil {
		return 0, fmt.Errorf("find lost jobs: %w", err)
	}
	var fs []Finish
	for _, j := range cands {
		expired := !j.LeaseUntil.After(now)
		// A job whose worker is not in the snapshot may belong to a worker that
		// registered after it was taken: only lease expiry decides those.
		// This engine's own jobs are skipped only while it runs them: a
		// claim whose reply was lost (the connection dropped after the
		// commit) leaves a job under this worker that nothing renews.
		if (j.Worker == e.me.ID && e.isRunning(j.ID)) || !(expired || dead[j.Worker]) {
			continue
		}
		if e.sameHost(workers, j.Worker) {
			// Kill what is left of the lost attempt on this host: every
			// process carrying its job id and attempt number, with the
			// process groups they lead.
			n, err := proc.KillByEnv("QUEUECTL_JOB_ID="+j.ID, "QUEUECTL_ATTEMPT="+strconv.Itoa(j.Attempts))
			if err != nil {
				e.log.Warn().Err(err).Str("job_id", j.ID).Msg("kill leftover processes of lost attempt")
			} else if n > 0 {
				e.log.Info().Str("job_id", j.ID).Int("processes", n).Msg("killed leftover processes of lost attempt")
			}
		}
		reason := "worker lost: lease expired"
		if dead[j.Worker] {
			reason = "worker lost: process " + j.Worker + " is gone"
		}
		f := e.cfg.Retry.Decide(j, j.Worker, End{
			Outcome: OutcomeLost, Error: reason, Started: j.StartedAt, Finished: now,
		}, now)
		if !dead[j.Worker] {
			f.LeaseExpiredBy = now // its worker may be alive: only an expired lease is taken
		}
		fs = append(fs, f)
	}
	n := 0
	if len(fs) > 0 {
		applied, err := e.store.FinishJobs(ctx, fs)
		if err != nil {
			return 0, fmt.Errorf("record lost jobs: %w", err)
		}
		for i, ok := range applied {
			if ok {
				n++
				e.log.Warn().Str("job_id", fs[i].JobID).Int("attempt", fs[i].Attempt).Str("state", string(fs[i].State)).
					Str("error", fs[i].Error).Msg("rescued lost job")
			}
		}
	}
	for id := range dead {
		if err := e.store.UnregisterWorker(ctx, id); err != nil && !errors.Is(err, ErrNotFound) {
			return n, fmt.Errorf("unregister dead worker: %w", err)
		}
	}
	return n, nil
}

func (e *Engine) sameHost(ws []*WorkerInfo, id string) bool {
	for _, w := range ws {
		if w.ID == id {
			return w.Host == e.me.Host && w.BootID == e.me.BootID
		}
	}
	return false
}

// workerGone reports whether w is certainly dead: on this host, its process
// is gone (or the host rebooted since); elsewhere, its heartbeat is older
// than two leases.
func (e *Engine) workerGone(w *WorkerInfo, now time.Time) bool {
	if w.Host == e.me.Host && e.me.BootID != "" {
		if w.BootID != e.me.BootID {
			return true
		}
		return !proc.Alive(w.PID, w.ProcStart)
	}
	return now.Sub(w.HeartbeatAt) > 2*e.cfg.Lease
}

// ProcessAvailable claims what each lane can take now, runs it to the end
// and records the outcomes. It is the engine's loop body without waiting,
// for tests driven by a fake clock and for one-shot use.
func (e *Engine) ProcessAvailable(ctx context.Context) (int, error) {
	n := 0
	var wg sync.WaitGroup
	for _, l := range e.cfg.Lanes {
		now := e.cfg.Clock.Now()
		jobs, err := e.store.ClaimJobs(ctx, ClaimParams{Worker: e.me.ID, Queues: l.Queues, Limit: l.Slots, Now: now, LeaseUntil: now.Add(e.cfg.Lease)})
		if err != nil {
			return n, fmt.Errorf("claim jobs: %w", err)
		}
		n += len(jobs)
		for _, j := range jobs {
			wg.Add(1)
			e.launch(j, wg.Done)
		}
	}
	wg.Wait()
	return n, nil
}
