// Package scheduler turns recurring-job templates into jobs: exactly one job
// per (template, slot), with catch-up and overlap policies.
//
// All schedule state lives in the store, never in memory: each template has
// a cursor (the last slot handled). Every tick the scheduler reads the
// templates, computes the slots due since each cursor with cronspec (the
// robfig/cron parser and Next only), decides by the catch-up policy which of
// them to fire, and asks the store to fire them. The store enforces the
// overlap policy and the one-job-per-slot rule in one transaction, so any
// number of schedulers, in any number of processes, may run against one
// database: each slot still fires once. A restart loses nothing; missed
// slots are found from the cursor.
package scheduler

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/queuectl/queuectl/queue"
	"github.com/queuectl/queuectl/scheduler/cronspec"
	"github.com/rs/zerolog"
)

// Store is what the scheduler needs of a queue.Store.
type Store interface {
	Templates(ctx context.Context) ([]*queue.Template, error)
	FireTemplate(ctx context.Context, p queue.FireParams) (queue.FireResult, error)
	GetConfig(ctx context.Context) (map[string]string, error)
	Queues(ctx context.Context) ([]queue.QueueConfig, error)
}

// Config configures a Scheduler; zero values take the defaults noted.
type Config struct {
	Clock queue.Clock
	Log   zerolog.Logger
	// Tick is the longest the scheduler sleeps between looks at the store
	// (for template changes and runs blocked by overlap); default 1s.
	Tick time.Duration
	// OnTime is how late a slot may be found and still count as on time
	// rather than missed (catch_up = none fires on-time slots); default 1m.
	OnTime time.Duration
	// Rand returns a number in [0,1) for jitter; default math/rand.
	Rand func() float64
	// TickTimeout bounds one tick's store calls; default 30s. A tick stuck
	// on a connection whose packets are dropped (no answer, no error for
	// as long as TCP takes to give up, about 15 minutes) is given up, and
	// the next tick tries again, its missed slots caught up.
	TickTimeout time.Duration
}

// Scheduler fires recurring jobs. Start and Stop are safe to call twice.
type Scheduler struct {
	store Store
	cfg   Config
	log   zerolog.Logger

	mu      sync.Mutex
	specs   map[string]*cronspec.Schedule // by zone + spec
	failing map[string]*tickFailures      // templates failing, by name

	life    sync.Mutex // guards the fields below
	started bool
	stopped bool
	cancel  context.CancelFunc
	done    chan struct{}
}

// New returns a scheduler that has not started.
func New(store Store, cfg Config) *Scheduler {
	if cfg.Clock == nil {
		cfg.Clock = queue.SystemClock()
	}
	if cfg.Tick <= 0 {
		cfg.Tick = time.Second
	}
	if cfg.OnTime <= 0 {
		cfg.OnTime = time.Minute
	}
	if cfg.Rand == nil {
		cfg.Rand = rand.Float64
	}
	if cfg.TickTimeout <= 0 {
		cfg.TickTimeout = 30 * time.Second
	}
	return &Scheduler{store: store, cfg: cfg, log: cfg.Log.With().Str("component", "scheduler").Logger(), specs: map[string]*cronspec.Schedule{},
		failing: map[string]*tickFailures{}}
}

// Start runs the scheduler loop until Stop. A second call, or one after
// Stop, does nothing.
func (s *Scheduler) Start(ctx context.Context) error {
	s.life.Lock()
	defer s.life.Unlock()
	if s.started || s.stopped {
		return nil
	}
	s.started = true
	ctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	s.cancel, s.done = cancel, make(chan struct{})
	go s.loop(ctx)
	return nil
}

// Stop ends the loop; a tick in progress finishes first (or ctx ends the
// wait). It is safe to call twice.
func (s *Scheduler) Stop(ctx context.Context) error {
	s.life.Lock()
	s.stopped = true
	cancel, done := s.cancel, s.done
	s.life.Unlock()
	if cancel == nil {
		return nil
	}
	cancel()
	select {
	case <-done:
	case <-ctx.Done():
	}
	return nil
}

func (s *Scheduler) loop(ctx context.Context) {
	defer close(s.done)
	var failing tickFailures
	t := time.NewTimer(0)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		tctx, cancel := context.WithTimeout(ctx, s.cfg.TickTimeout)
		next, err := s.Tick(tctx)
		cancel()
		if ctx.Err() == nil {
			failing.note(s.log, s.cfg.Clock.Now(), err, "scheduler tick", "scheduler ticks again")
		}
		wait := s.cfg.Tick
		if !next.IsZero() {
			wait = min(wait, max(next.Sub(s.cfg.Clock.Now()), time.Millisecond))
		}
		t.Reset(wait)
	}
}

// Tick handles every enabled template, and the run triggered by hand that
// a disabled one may hold waiting, once at the clock's current time and
// returns the earliest next fire time (zero if none).
func (s *Scheduler) Tick(ctx context.Context) (time.Time, error) {
	now := s.cfg.Clock.Now()
	ts, err := s.store.Templates(ctx)
	if err != nil {
		return time.Time{}, fmt.Errorf("read templates: %w", err)
	}
	defaults, err := LoadDefaults(ctx, s.store)
	if err != nil {
		return time.Time{}, err
	}
	var next time.Time
	for _, t := range ts {
		if !t.Enabled {
			// A disabled job fires nothing on its schedule, but a run
			// triggered by hand (cron trigger, the API, the dashboard)
			// that waits for the previous one (overlap = queue) starts
			// when that one ends, as the trigger said it would.
			if t.PendingKind == queue.FireManual {
				err := s.fireWaiting(ctx, t, defaults, now)
				if err != nil && ctx.Err() != nil {
					return next, err
				}
				s.noteTemplate(t, now, err, "fire template")
			}
			continue
		}
		sched, err := s.schedule(t)
		if err != nil {
			s.noteTemplate(t, now, err, "bad schedule; template skipped")
			continue
		}
		// One template's failure must not keep the others from firing,
		// nor log at every tick while it lasts.
		err = s.handle(ctx, t, sched, defaults, now)
		if err != nil && ctx.Err() != nil {
			return next, err
		}
		s.noteTemplate(t, now, err, "fire template")
		// An "@every" template's next slot is on its grid, not an
		// interval after now.
		if n := NextAfter(sched, t.Cursor, now); !n.IsZero() && (next.IsZero() || n.Before(next)) {
			next = n
		}
	}
	s.forgetFailures(ts)
	return next, nil
}

func (s *Scheduler) schedule(t *queue.Template) (*cronspec.Schedule, error) {
	key := t.TimeZone + "\x00" + t.Schedule
	s.mu.Lock()
	defer s.mu.Unlock()
	if sc := s.specs[key]; sc != nil {
		return sc, nil
	}
	sc, err := Parse(t)
	if err != nil {
		return nil, err
	}
	s.specs[key] = sc
	return sc, nil
}

// handle fires what is due of one template.
func (s *Scheduler) handle(ctx context.Context, t *queue.Template, sched *cronspec.Schedule, defaults Defaults, now time.Time) error {
	if err := s.fireWaiting(ctx, t, defaults, now); err != nil {
		return err
	}
	log := s.log.With().Str("template", t.Name).Logger()
	fire, last, missed := s.toFire(t, sched, now, log)
	if last.IsZero() {
		return nil
	}
	if missed {
		log.Info().Str("catch_up", t.CatchUp).Int("firing", len(fire)).Msg("passing over missed slots")
		if len(fire) == 0 {
			_, err := s.store.FireTemplate(ctx, queue.FireParams{Template: t.Name, Kind: queue.FireCron, Slot: last, Cursor: last, Now: now})
			return err
		}
	}
	for _, slot := range fire {
		res, err := Fire(ctx, s.store, t, defaults, queue.FireCron, slot, now, s.cfg.Rand)
		if err != nil {
			return err
		}
		switch {
		case res.Fired:
			log.Info().Str("job_id", res.JobID).Time("slot", slot).Msg("fired")
		case res.Skipped, res.Queued:
			log.Info().Time("slot", slot).Msg("slot not fired: " + res.Why(t.Overlap))
		default:
			log.Debug().Str("job_id", res.JobID).Time("slot", slot).Msg("slot already fired by another scheduler")
		}
	}
	return nil
}

// fireWaiting fires t's run that waits for the previous one (overlap =
// queue), if it has one and that run has ended.
func (s *Scheduler) fireWaiting(ctx context.Context, t *queue.Template, defaults Defaults, now time.Time) error {
	if t.PendingTrigger.IsZero() {
		return nil
	}
	res, err := Fire(ctx, s.store, t, defaults, t.PendingKind, t.PendingTrigger, now, s.cfg.Rand)
	if err != nil {
		return err
	}
	if res.Fired {
		s.log.Info().Str("template", t.Name).Str("job_id", res.JobID).Time("slot", t.PendingTrigger).
			Msg("waiting run fired after the previous one ended")
	}
	return nil
}

// toFire decides by the catch-up policy which slots since the cursor to
// fire. last is the latest due slot (zero: none is due); missed reports
// slots passed over. Only catch_up = "all" walks the slots; the others
// look up the latest one (Latest), however long the outage.
func (s *Scheduler) toFire(t *queue.Template, sched Nexter, now time.Time, log zerolog.Logger) (fire []time.Time, last time.Time, missed bool) {
	if t.CatchUp == queue.CatchUpAll {
		slots, total, truncated := Due(sched, t.Cursor, now, max(t.MaxCatchUp, 1))
		if total == 0 {
			return nil, time.Time{}, false
		}
		if truncated {
			// The walk stopped short of now: its slots are not the
			// latest. Step back from now instead, which costs a number of
			// Next calls proportional to the slots fired.
			log.Warn().Int("slots", total).Msg("too many missed slots; older ones are passed over")
			slots = lastSlots(sched, t.Cursor, now, max(t.MaxCatchUp, 1))
		}
		return slots, slots[len(slots)-1], total > len(slots)
	}
	last, n := Latest(sched, t.Cursor, now)
	switch {
	case n == 0:
		return nil, time.Time{}, false
	case n == 1 && now.Sub(last) <= s.cfg.OnTime: // the normal case: one slot, just due
		return []time.Time{last}, last, false
	case t.CatchUp == queue.CatchUpNone && now.Sub(last) > s.cfg.OnTime:
		return nil, last, true
	default: // latest, or none with the newest slot still on time
		return []time.Time{last}, last, n > 1
	}
}

// Defaults are the settings and queue overrides jobs are resolved against.
type Defaults struct {
	Settings queue.Settings
	Queues   map[string]queue.Overrides
}

// LoadDefaults reads them from the store.
func LoadDefaults(ctx context.Context, st Store) (Defaults, error) {
	kv, err := st.GetConfig(ctx)
	if err != nil {
		return Defaults{}, fmt.Errorf("read config: %w", err)
	}
	settings, err := queue.SettingsFrom(kv)
	if err != nil {
		return Defaults{}, fmt.Errorf("read config: %w", err)
	}
	qs, err := st.Queues(ctx)
	if err != nil {
		return Defaults{}, fmt.Errorf("read queues: %w", err)
	}
	d := Defaults{Settings: settings, Queues: map[string]queue.Overrides{}}
	for _, q := range qs {
		d.Queues[q.Name] = q.Retry
	}
	return d, nil
}

// Fire fires one slot (or a manual trigger at slot) of t through the store.
// The job's run_at is the slot plus a random jitter up to t.Jitter.
func Fire(ctx context.Context, st Store, t *queue.Template, d Defaults, kind queue.FireKind, slot, now time.Time, rnd func() float64) (queue.FireResult, error) {
	runAt := slot
	if t.Jitter > 0 && rnd != nil {
		runAt = runAt.Add(time.Duration(rnd() * float64(t.Jitter)))
	}
	suffix := "-" + slot.UTC().Format("20060102T150405Z")
	if kind == queue.FireManual {
		suffix = "-manual-" + slot.UTC().Format("20060102T150405.000000Z")
	}
	id := jobID(t.Name, suffix)
	n := queue.NewJob{
		ID: id, Queue: t.Queue, Command: t.Command, Priority: t.Priority, Env: t.Env, Dir: t.Dir,
		MaxRetries: t.Retry.MaxRetries, Timeout: t.Retry.Timeout, BackoffBase: t.Retry.BackoffBase, MaxBackoff: t.Retry.MaxBackoff,
		RunAt: runAt, Template: t.Name, ScheduledAt: slot, Hooks: t.Retry.Hooks,
	}
	q := t.Queue
	if q == "" {
		q = queue.DefaultQueue
	}
	j, err := n.Resolve(d.Queues[q].Apply(d.Settings), now)
	if err != nil {
		return queue.FireResult{}, fmt.Errorf("template %s: %w", t.Name, err)
	}
	res, err := st.FireTemplate(ctx, queue.FireParams{Template: t.Name, Kind: kind, Slot: slot, Job: j, Overlap: t.Overlap, Unique: t.Unique, Cursor: slot, Now: now})
	if err != nil {
		return res, fmt.Errorf("fire %s at %s: %w", t.Name, slot.Format(time.RFC3339), err)
	}
	return res, nil
}

// maxIDLen is the longest job id a store accepts.
const maxIDLen = 200

// jobID names a fired job after its template and slot. A name too long to
// fit is shortened, on a character boundary so that the id stays valid
// UTF-8, and made unique again with a hash of the whole name.
func jobID(name, suffix string) string {
	if len(name)+len(suffix) <= maxIDLen {
		return name + suffix
	}
	sum := sha256.Sum256([]byte(name))
	tag := "~" + hex.EncodeToString(sum[:4])
	cut := maxIDLen - len(suffix) - len(tag)
	for cut > 0 && !utf8.RuneStart(name[cut]) {
		cut--
	}
	return name[:cut] + tag + suffix
}
