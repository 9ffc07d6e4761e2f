package queue

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"time"

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
	// Held, if set, counts jobs of the lane's queues that run elsewhere in
	// this process and take from its slots: those of an engine a service
	// replaced at a reload, still finishing. The lane claims only for
	// Slots - busy - Held() slots, so a reload never runs more of a queue's
	// jobs at once than its concurrency.
	Held func() int
}

// EngineConfig configures an Engine. Zero values take the defaults noted.
type EngineConfig struct {
	WorkerID   string        // default: host:pid:random
	Service    bool          // registered as a service (queuectl run), which worker stop leaves alone
	Host       string        // this host's name; default os.Hostname
	Lanes      []Lane        // default: one lane, every queue, one slot
	Lease      time.Duration // default 30s; renewed every Lease/3
	Poll       time.Duration // fallback poll when idle; default 2s
	Rescue     time.Duration // how often to look for lost jobs; default 2s
	Tidy       time.Duration // how often a store that tidies itself (Tidier) is asked to; default 15s
	CancelPoll time.Duration // how often busy workers look for cancel requests; default 1s
	LiveOutput time.Duration // how often a running attempt's new output is saved; default 1s
	Retry      RetryPolicy
	Clock      Clock
	Log        zerolog.Logger
	// Processes knows this host's processes; default: none, so workers are
	// judged by heartbeats only and leftovers of lost attempts are not killed.
	Processes Processes
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
	if c.Tidy <= 0 {
		c.Tidy = 15 * time.Second
	}
	if c.CancelPoll <= 0 {
		c.CancelPoll = time.Second
	}
	if c.LiveOutput <= 0 {
		c.LiveOutput = time.Second
	}
	if c.Clock == nil {
		c.Clock = SystemClock()
	}
	if c.Processes == nil {
		c.Processes = noProcesses{}
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

// Engine is one worker process's job loop, made of parts with one job each:
// slot lanes claim jobs (lanes.go), the runner goroutines run them and
// record outcomes with their history (running.go), the lease keeper renews
// leases and relays cancel and stop requests (lease.go), the rescuer returns
// jobs of dead workers (rescue.go), the tidier asks a store that needs it
// to vacuum its tables (tidy.go), the wake fan-out passes the store's
// wake-ups on (wakeups.go), and Stop shuts down in two phases (shutdown.go).
type Engine struct {
	store  Store
	runner Runner
	cfg    EngineConfig
	log    zerolog.Logger
	me     WorkerInfo

	lanes   *slotLanes
	leases  *leaseKeeper
	rescuer *rescuer
	tidy    *tidier // nil unless the store is a Tidier
	wakes   *wakeFanout
	running *runningSet
	finish  *finisher
	waiting quota // outcomes waiting to be recorded whose slots were freed (attempt)

	jobCtx context.Context // parent of every attempt's context
	jobs   sync.WaitGroup  // running jobs

	stopAsked   chan struct{}
	stopAskOnce sync.Once
	startOnce   sync.Once
	startErr    error
	stopOnce    sync.Once
	stopErr     error
}

// outcomesPerSlot is how many outcomes per slot may wait for their batch
// with their slots already freed (attempt): a worker holds at most
// (1 + outcomesPerSlot) × its slots jobs, running or waiting to be
// recorded. Jobs shorter than a batch's round trip pile up there; with one
// outcome per slot a slot stood idle waiting for the previous batch. Four
// per slot on PostgreSQL, no-op jobs, three rounds of
// BenchmarkEngineNoop: 1.5 × the rate of one per slot at 1 slot, 1.2 × at
// 8, 1.1 × at 64 (SQLite: 1.2 ×, 1.05 ×, within noise). What it costs: the
// outcomes' output held in memory (at most executor's OutputLimit each)
// and, should the worker die, that many more finished jobs whose outcomes
// were lost and which run again once their leases expire.
const outcomesPerSlot = 4

// NewEngine returns an engine that has not started.
func NewEngine(store Store, runner Runner, cfg EngineConfig) *Engine {
	cfg.defaults()
	host := cfg.Host
	if host == "" {
		host, _ = os.Hostname()
	}
	pid := os.Getpid()
	start, _ := cfg.Processes.StartTime(pid)
	if cfg.WorkerID == "" {
		cfg.WorkerID = fmt.Sprintf("%s:%d:%04x", host, pid, rand.Uint32()&0xffff)
	}
	var queues []string
	slots := 0
	for _, l := range cfg.Lanes {
		queues = append(queues, l.Queues...)
		slots += l.Slots
	}
	e := &Engine{
		store: store, runner: runner, cfg: cfg,
		log:       cfg.Log.With().Str("worker", cfg.WorkerID).Logger(),
		me:        WorkerInfo{ID: cfg.WorkerID, PID: pid, Host: host, BootID: cfg.Processes.BootID(), ProcStart: start, Queues: queues, Service: cfg.Service},
		running:   newRunningSet(),
		waiting:   make(quota, slots*outcomesPerSlot),
		stopAsked: make(chan struct{}),
		jobCtx:    context.Background(),
	}
	e.finish = newFinisher(store, func(err error, try int) {
		e.log.Warn().Err(err).Int("try", try).Msg("record outcomes")
	})
	e.wakes = &wakeFanout{store: store}
	e.leases = &leaseKeeper{
		store: store, clock: cfg.Clock, me: &e.me, lease: cfg.Lease, cancelPoll: cfg.CancelPoll,
		running: e.running, wake: e.wakes.add(), log: e.log,
		stopAsked: func() { e.stopAskOnce.Do(func() { close(e.stopAsked) }) },
	}
	e.lanes = &slotLanes{
		store: store, clock: cfg.Clock, worker: cfg.WorkerID, lease: cfg.Lease, poll: cfg.Poll,
		launch: func(j *Job, leaseFrom time.Time, free func()) { e.launch(j, leaseFrom, free, nil) },
		log:    e.log, lanes: cfg.Lanes, busy: make([]atomic.Int32, len(cfg.Lanes)),
	}
	e.lanes.claimJobs = func(ctx context.Context, p ClaimParams, due *dueFlag) ([]*Job, error) {
		if jobs, sent, err := e.finish.claim(p, due); sent {
			return jobs, err
		}
		due.clear()
		return store.ClaimJobs(ctx, p)
	}
	if e.finish.both != nil {
		e.finish.due = &e.lanes.due
	}
	for range cfg.Lanes {
		e.lanes.wakes = append(e.lanes.wakes, e.wakes.add())
	}
	e.rescuer = &rescuer{
		store: store, clock: cfg.Clock, me: e.me, lease: cfg.Lease, every: cfg.Rescue,
		running: e.running, procs: cfg.Processes, retry: cfg.Retry, log: e.log, hooks: e.runHooks,
	}
	if t, ok := store.(Tidier); ok {
		e.tidy = &tidier{store: t, every: cfg.Tidy, log: e.log}
	}
	return e
}

// ID is the worker id the engine registers under.
func (e *Engine) ID() string { return e.cfg.WorkerID }

// Busy counts the slots the engine's lanes of queue q hold now, a running
// job each (a lane of every queue counts all of its jobs).
func (e *Engine) Busy(q string) int {
	n := 0
	for i, l := range e.cfg.Lanes {
		if len(l.Queues) == 0 || slices.Contains(l.Queues, q) {
			n += int(e.lanes.busy[i].Load())
		}
	}
	return n
}

// StopClaiming ends the engine's claims (a claim in flight completes
// first, and its jobs count in Busy); running jobs run on. Stop still
// has to be called.
func (e *Engine) StopClaiming() { e.lanes.Stop() }

// Wake makes every lane look for work now.
func (e *Engine) Wake() { e.wakes.wakeAll() }

// StopRequested is closed when the store asked this worker to stop
// (queuectl worker stop); the owner should then call Stop.
func (e *Engine) StopRequested() <-chan struct{} { return e.stopAsked }

// Start registers the worker and starts claiming. It is safe to call twice;
// a second call returns the first one's result.
func (e *Engine) Start(ctx context.Context) error {
	e.startOnce.Do(func() { e.startErr = e.start(ctx) })
	return e.startErr
}

func (e *Engine) start(ctx context.Context) (err error) {
	now := e.cfg.Clock.Now()
	e.me.StartedAt, e.me.HeartbeatAt = now, now
	if err := e.store.RegisterWorker(ctx, &e.me); err != nil {
		return err // the store names the operation
	}
	defer func() {
		if err != nil {
			// Leave nothing running or registered behind: no job runs yet,
			// so Stop only stops the parts and unregisters.
			if serr := e.Stop(context.Background()); serr != nil {
				e.log.Warn().Err(serr).Msg("stop after a failed start")
			}
		}
	}()
	e.finish.start()
	if err := e.wakes.Start(); err != nil {
		return err
	}
	e.leases.Start()
	e.rescuer.Start()
	if e.tidy != nil {
		e.tidy.Start()
	}
	e.lanes.Start()
	e.log.Info().Int("pid", e.me.PID).Str("host", e.me.Host).Strs("queues", e.me.Queues).Msg("worker started")
	return nil
}

// RescueOnce sends jobs of dead workers back through the retry path as lost
// attempts, after killing what is left of their process groups on this
// host. It also unregisters dead workers. It returns how many jobs it rescued.
func (e *Engine) RescueOnce(ctx context.Context) (int, error) {
	return e.rescuer.rescueOnce(ctx)
}

// ProcessAvailable claims what each lane can take now, runs it to the end
// and records the outcomes. It is the engine's loop body without waiting,
// for tests driven by a fake clock and for one-shot use.
func (e *Engine) ProcessAvailable(ctx context.Context) (int, error) {
	e.finish.start()
	n := 0
	var wg sync.WaitGroup
	for _, l := range e.cfg.Lanes {
		sent, now := time.Now(), e.cfg.Clock.Now()
		jobs, err := e.store.ClaimJobs(ctx, ClaimParams{Worker: e.me.ID, Queues: l.Queues, Limit: l.Slots, Now: now, LeaseUntil: now.Add(e.cfg.Lease)})
		if err != nil {
			return n, err // the store's "claim jobs: …"
		}
		n += len(jobs)
		for _, j := range jobs {
			wg.Add(1)
			e.launch(j, sent, nil, wg.Done)
		}
	}
	wg.Wait()
	return n, nil
}
