package queue_test

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/queuectl/queuectl/internal/proc"
	"github.com/queuectl/queuectl/internal/testutil/fakeclock"
	"github.com/queuectl/queuectl/queue"
)

// Tests of the engine's real loop (Start / Stop) on the wall clock, with a
// fake runner that blocks until released or cancelled.

// run is one call of the blocking runner.
type run struct {
	ctx  context.Context
	spec queue.RunSpec
}

func (r run) env(key string) string {
	for _, kv := range r.spec.Env {
		if v, ok := strings.CutPrefix(kv, key+"="); ok {
			return v
		}
	}
	return ""
}

// blocker is a Runner whose runs block until release is closed (exit 0) or
// their ctx is cancelled (reported as cancelled, like the real executor).
type blocker struct {
	started chan run
	release chan struct{}
	once    sync.Once
	// onStart/onEnd, if set, are called as a run starts and ends.
	onStart, onEnd func(run)
}

func newBlocker() *blocker {
	return &blocker{started: make(chan run, 100), release: make(chan struct{})}
}

// releaseAll lets every blocked and future run finish with exit 0.
func (b *blocker) releaseAll() { b.once.Do(func() { close(b.release) }) }

func (b *blocker) runner() queue.RunnerFunc {
	return func(ctx context.Context, spec queue.RunSpec) queue.RunResult {
		r := run{ctx: ctx, spec: spec}
		res := queue.RunResult{Started: time.Now().UTC()}
		if b.onStart != nil {
			b.onStart(r)
		}
		b.started <- r
		select {
		case <-b.release:
			res.ExitCode = 0
		case <-ctx.Done():
			res.ExitCode, res.Signal, res.Canceled = -1, "SIGKILL", true
		}
		if b.onEnd != nil {
			b.onEnd(r)
		}
		res.Finished = time.Now().UTC()
		return res
	}
}

// spyStore records the contexts and calls the engine's claim loop makes.
type spyStore struct {
	queue.Store
	mu        sync.Mutex
	claimCtx  context.Context // the engine's claim context (ends at phase 1 of Stop)
	claims    int
	nextRunAt int
}

func (s *spyStore) ClaimJobs(ctx context.Context, p queue.ClaimParams) ([]*queue.Job, error) {
	s.mu.Lock()
	s.claimCtx = ctx
	s.claims++
	s.mu.Unlock()
	return s.Store.ClaimJobs(ctx, p)
}

func (s *spyStore) NextRunAt(ctx context.Context, queues []string) (time.Time, error) {
	s.mu.Lock()
	s.nextRunAt++
	s.mu.Unlock()
	return s.Store.NextRunAt(ctx, queues)
}

func (s *spyStore) lastClaimCtx() context.Context {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.claimCtx
}

func (s *spyStore) idleWaits() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.nextRunAt
}

// startEngine starts an engine on st and stops it when
// the test ends.
func startEngine(t *testing.T, st queue.Store, r queue.Runner, cfg queue.EngineConfig) *queue.Engine {
	t.Helper()
	if cfg.Processes == nil {
		cfg.Processes = proc.Host{}
	}
	eng := queue.NewEngine(st, r, cfg)
	if err := eng.Start(testCtx(t)); err != nil {
		t.Fatalf("start engine: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		eng.Stop(ctx)
	})
	return eng
}

func workerIDs(t *testing.T, st queue.Store) []string {
	t.Helper()
	ws, err := st.ListWorkers(testCtx(t))
	if err != nil {
		t.Fatalf("list workers: %v", err)
	}
	var ids []string
	for _, w := range ws {
		ids = append(ids, w.ID)
	}
	return ids
}

func TestEngineStopWaitsForRunningJobs(t *testing.T) {
	st, _ := openStore(t)
	spy := &spyStore{Store: st}
	b := newBlocker()
	enqueue(t, st, queue.NewJob{ID: "slow"}, time.Now())
	eng := startEngine(t, spy, b.runner(), queue.EngineConfig{Poll: 50 * time.Millisecond})
	t.Cleanup(b.releaseAll) // runs before the engine's Stop if the test fails early
	r := recv(t, b.started, "the job to start")
	if ids := workerIDs(t, st); !slices.Equal(ids, []string{eng.ID()}) {
		t.Fatalf("registered workers %v, want [%s]", ids, eng.ID())
	}

	stopped := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		stopped <- eng.Stop(ctx)
	}()
	// Phase 1 has begun once the claim context ends.
	recv(t, spy.lastClaimCtx().Done(), "Stop to stop claiming")
	enqueue(t, st, queue.NewJob{ID: "late"}, time.Now())

	select {
	case err := <-stopped:
		t.Fatalf("Stop returned (%v) while a job was still running", err)
	default:
	}
	if r.ctx.Err() != nil {
		t.Fatal("Stop with a generous grace period cancelled the running job")
	}
	b.releaseAll()
	if err := recv(t, stopped, "Stop to return after the job finished"); err != nil {
		t.Fatalf("stop: %v", err)
	}

	if got := getJob(t, st, "slow"); got.State != queue.StateCompleted || got.Attempts != 1 {
		t.Errorf("running job: state %s attempts %d, want completed 1", got.State, got.Attempts)
	}
	if got := getJob(t, st, "late"); got.State != queue.StatePending || got.Attempts != 0 {
		t.Errorf("job enqueued during Stop: state %s attempts %d, want pending 0 (no claims after phase 1)", got.State, got.Attempts)
	}
	if ids := workerIDs(t, st); len(ids) != 0 {
		t.Errorf("workers still registered after Stop: %v", ids)
	}
}

func TestEngineStopInterruptsWhenGraceEnds(t *testing.T) {
	st, _ := openStore(t)
	b := newBlocker()
	enqueue(t, st, queue.NewJob{ID: "long"}, time.Now())
	eng := startEngine(t, st, b.runner(), queue.EngineConfig{})
	r := recv(t, b.started, "the job to start")

	expired, cancel := context.WithCancel(context.Background())
	cancel()
	stopped := make(chan error, 1)
	go func() { stopped <- eng.Stop(expired) }()
	if err := recv(t, stopped, "Stop with an ended grace period to return"); err != nil {
		t.Fatalf("stop: %v", err)
	}
	if r.ctx.Err() == nil {
		t.Fatal("the running job's context was not cancelled")
	}

	got := getJob(t, st, "long")
	if got.State != queue.StatePending || got.Attempts != 1 || got.Uncharged != 1 {
		t.Errorf("interrupted job: state %s attempts %d uncharged %d, want pending 1 1 (attempt not charged)",
			got.State, got.Attempts, got.Uncharged)
	}
	h := history(t, st, "long")
	if len(h) != 1 || h[0].Outcome != queue.OutcomeInterrupted || h[0].Number != 1 {
		t.Errorf("history %v, want one interrupted attempt numbered 1", outcomes(h))
	}

	go func() { stopped <- eng.Stop(context.Background()) }()
	if err := recv(t, stopped, "a second Stop to return"); err != nil {
		t.Errorf("second stop: %v", err)
	}
	if ids := workerIDs(t, st); len(ids) != 0 {
		t.Errorf("workers still registered after Stop: %v", ids)
	}

	// The next worker runs it as attempt 2: attempt numbers are never
	// taken back, so a rescuer looking for attempt 1's leftovers (by
	// QUEUECTL_ATTEMPT) cannot take attempt 2's processes for them.
	clock := fakeclock.New(time.Now().Add(time.Second))
	rerun := &scripted{clock: clock, results: []queue.RunResult{exited(0)}}
	next := &fakeEngine{store: st, clock: clock, runner: rerun, eng: queue.NewEngine(st, rerun.runner(), queue.EngineConfig{Clock: clock, Processes: proc.Host{}})}
	next.process(t, 1)
	if env := rerun.calls()[0].Env; !slices.Contains(env, "QUEUECTL_ATTEMPT=2") {
		t.Errorf("rerun env %v, want QUEUECTL_ATTEMPT=2", env)
	}
	if got := getJob(t, st, "long"); got.State != queue.StateCompleted || got.Attempts != 2 || got.MaxAttempts() != 5 {
		t.Errorf("rerun: state %s attempts %d of %d, want completed 2 of 5 (4 charged and the interrupted one)",
			got.State, got.Attempts, got.MaxAttempts())
	}
	if h := history(t, st, "long"); len(h) != 2 || h[0].Number != 1 || h[1].Number != 2 {
		t.Errorf("history %+v, want attempts numbered 1 and 2", h)
	}
}

func TestEngineCancelRunningJob(t *testing.T) {
	st, _ := openStore(t)
	b := newBlocker()
	enqueue(t, st, queue.NewJob{ID: "doomed"}, time.Now())
	startEngine(t, st, b.runner(), queue.EngineConfig{CancelPoll: 20 * time.Millisecond})
	r := recv(t, b.started, "the job to start")

	was, err := st.CancelJob(testCtx(t), "doomed", time.Now())
	if err != nil || was != queue.StateProcessing {
		t.Fatalf("cancel: was %s err %v, want processing", was, err)
	}
	recv(t, r.ctx.Done(), "the runner's context to be cancelled")
	waitFor(t, "the job to end cancelled", func() bool {
		return getJob(t, st, "doomed").State == queue.StateCancelled
	})
	got := getJob(t, st, "doomed")
	if got.Error != "cancelled by user" {
		t.Errorf("error %q, want cancelled by user", got.Error)
	}
	if h := history(t, st, "doomed"); len(h) != 1 || h[0].Outcome != queue.OutcomeCancelled {
		t.Errorf("history %v, want [cancelled]", outcomes(h))
	}
}

func TestEngineWakesOnInsertFromAnotherHandle(t *testing.T) {
	st, path := openStore(t)
	other := openStoreAt(t, path)
	spy := &spyStore{Store: st}
	b := newBlocker()
	// With a one-minute poll, only a wake-up can start the job in time.
	startEngine(t, spy, b.runner(), queue.EngineConfig{Poll: time.Minute})
	t.Cleanup(b.releaseAll)
	waitFor(t, "the lane to go idle", func() bool { return spy.idleWaits() > 0 })

	enqueue(t, other, queue.NewJob{ID: "poke"}, time.Now())
	r := recv(t, b.started, "the job inserted by another handle to start")
	if id := r.env("QUEUECTL_JOB_ID"); id != "poke" {
		t.Fatalf("started job %q, want poke", id)
	}
}

func TestEngineLanesLimitConcurrency(t *testing.T) {
	st, _ := openStore(t)
	b := newBlocker()
	var mu sync.Mutex
	running, peak := map[string]int{}, map[string]int{}
	b.onStart = func(r run) {
		mu.Lock()
		defer mu.Unlock()
		q := r.env("QUEUECTL_QUEUE")
		running[q]++
		peak[q] = max(peak[q], running[q])
	}
	b.onEnd = func(r run) {
		mu.Lock()
		defer mu.Unlock()
		running[r.env("QUEUECTL_QUEUE")]--
	}
	now := time.Now()
	var ids []string
	for i, q := range []string{"a", "a", "a", "a", "a", "b", "b", "b"} {
		id := q + string(rune('0'+i))
		ids = append(ids, id)
		enqueue(t, st, queue.NewJob{ID: id, Queue: q}, now)
	}
	startEngine(t, st, b.runner(), queue.EngineConfig{Lanes: []queue.Lane{
		{Queues: []string{"a"}, Slots: 2},
		{Queues: []string{"b"}, Slots: 1},
	}})
	t.Cleanup(b.releaseAll)
	for range 3 {
		recv(t, b.started, "the lanes to fill their slots")
	}
	mu.Lock()
	full := map[string]int{"a": running["a"], "b": running["b"]}
	mu.Unlock()
	if full["a"] != 2 || full["b"] != 1 {
		t.Fatalf("with slots full: running %v, want a=2 b=1", full)
	}

	b.releaseAll()
	waitFor(t, "every job to complete", func() bool {
		for _, id := range ids {
			if getJob(t, st, id).State != queue.StateCompleted {
				return false
			}
		}
		return true
	})
	mu.Lock()
	defer mu.Unlock()
	if peak["a"] != 2 || peak["b"] != 1 {
		t.Errorf("peak concurrency %v, want a=2 b=1", peak)
	}
}

func TestEngineStartsDelayedJobAtItsRunAt(t *testing.T) {
	st, _ := openStore(t)
	b := newBlocker()
	runAt := time.Now().Add(150 * time.Millisecond).UTC().Truncate(time.Microsecond)
	enqueue(t, st, queue.NewJob{ID: "later", RunAt: runAt}, time.Now())
	// With a one-minute poll, the lane must sleep until run_at, not the poll.
	startEngine(t, st, b.runner(), queue.EngineConfig{Poll: time.Minute})
	t.Cleanup(b.releaseAll)
	r := recv(t, b.started, "the delayed job to start")
	if got := getJob(t, st, "later").StartedAt; got.Before(runAt) {
		t.Errorf("started at %v, before its run_at %v", got, runAt)
	}
	if id := r.env("QUEUECTL_JOB_ID"); id != "later" {
		t.Errorf("started %q, want later", id)
	}
}
