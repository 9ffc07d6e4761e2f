package queue

import (
	"context"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"
)

// slotLanes claims work for the engine's lanes: each lane has its own slots
// and queues, claims as many jobs as it has free slots, hands them to launch
// and sleeps until a slot frees up, a wake-up arrives or its next delayed job
// is due. Stop (phase 1 of shutdown) ends claiming; launched jobs run on.
type slotLanes struct {
	store Store
	// claimJobs claims for a lane whose claim may be due: the store's
	// ClaimJobs, or a claim sent through the finisher's batches (see
	// finisher). Either clears due once the claim is on its way.
	claimJobs func(ctx context.Context, p ClaimParams, due *dueFlag) ([]*Job, error)
	due       atomic.Int32 // lanes with a claim due
	clock     Clock
	worker    string
	lease     time.Duration
	poll      time.Duration
	launch    func(j *Job, leaseFrom time.Time, free func())
	log       zerolog.Logger
	lanes     []Lane
	busy      []atomic.Int32  // one per lane: its slots taken by running jobs
	wakes     []chan struct{} // one per lane
	svc       service
}

// Start starts one claim loop per lane. It is safe to call twice.
func (s *slotLanes) Start() {
	s.svc.start(func(ctx context.Context) {
		var wg sync.WaitGroup
		for i, l := range s.lanes {
			wg.Add(1)
			go func() {
				defer wg.Done()
				s.loop(ctx, l, &s.busy[i], s.wakes[i])
			}()
		}
		wg.Wait()
	})
}

// Stop stops claiming and waits for the claim loops to return (a claim in
// flight completes first). It is safe to call twice.
func (s *slotLanes) Stop() { s.svc.stop() }

func (s *slotLanes) loop(ctx context.Context, l Lane, busy *atomic.Int32, wake chan struct{}) {
	log := s.log.With().Str("lane", l.Name).Logger()
	freed := make(chan struct{}, 1)
	due := &dueFlag{count: &s.due}
	defer due.stop()
	var mu sync.Mutex // guards pace
	busyNow := func() int { return int(busy.Load()) }
	timer := time.NewTimer(0)
	defer timer.Stop()
	failures := 0
	var pace lanePace
	for {
		if ctx.Err() != nil {
			return
		}
		free := l.Slots - busyNow()
		wait := s.poll
		if l.Held != nil {
			if held := l.Held(); held > 0 {
				free -= held
				// Slots held elsewhere free without a word to this
				// lane: look again soon rather than at the next poll.
				wait = min(wait, heldRecheck)
			}
		}
		if free > 0 {
			claimedAt := s.clock.Now()
			jobs, sent, err := s.claim(ctx, l, free, due)
			switch {
			case err != nil && ctx.Err() != nil:
				return
			case err != nil:
				failures++
				wait = retryDelay(failures)
				log.Error().Err(err).Int64("retry_in_ms", wait.Milliseconds()).Msg("claim jobs")
			default:
				failures = 0
				mu.Lock()
				pace.claimed(time.Since(sent))
				mu.Unlock()
				for _, j := range jobs {
					busy.Add(1)
					launched := time.Now()
					s.launch(j, sent, func() {
						ran := time.Since(launched)
						mu.Lock()
						pace.ran(ran)
						if busy.Add(-1) == 0 || pace.refillsAtOnce() {
							due.set() // and the poke below makes the lane claim
						}
						mu.Unlock()
						poke(freed)
					})
				}
				if len(jobs) == free {
					// Look again once the slots just filled free up.
					gatherFreeSlots(ctx, pace.gatherWait(&mu), freed, busyNow)
					continue
				}
				wait = s.untilNextRun(ctx, l, claimedAt)
			}
		}
		resetTimer(timer, wait)
		freedNow, wakeNow := freed, wake
		if failures > 0 {
			// The store failed the claim: back off in full. A freed slot
			// or a wake-up does not make it answer sooner.
			freedNow, wakeNow = nil, nil
		}
		select {
		case <-ctx.Done():
			return
		case <-freedNow:
			gatherFreeSlots(ctx, pace.gatherWait(&mu), freed, busyNow)
		case <-wakeNow:
		case <-timer.C:
		}
	}
}

// dueFlag marks a lane whose claim is due: a slot has freed that the lane
// refills as soon as it runs (its last busy slot, or any slot of a lane
// whose jobs outlast its claims, see lanePace). The job that freed the
// slot sends its outcome at the same moment, and the finisher's batch
// waits for the claim to join it (see finisher). count counts the lanes
// marked. Once its lane has stopped claiming the flag stays down: jobs
// still running free their slots, but no claim follows.
type dueFlag struct {
	state atomic.Int32 // dueIdle, dueSet or dueStopped
	count *atomic.Int32
}

const (
	dueIdle int32 = iota
	dueSet
	dueStopped
)

func (d *dueFlag) set() {
	if d.state.CompareAndSwap(dueIdle, dueSet) {
		d.count.Add(1)
	}
}

func (d *dueFlag) clear() {
	if d.state.CompareAndSwap(dueSet, dueIdle) {
		d.count.Add(-1)
	}
}

func (d *dueFlag) stop() {
	if d.state.Swap(dueStopped) == dueSet {
		d.count.Add(-1)
	}
}

// batchWait bounds how long a lane waits for more slots to free up before
// it claims, so that one claim serves several slots.
const batchWait = time.Millisecond

// gatherYields is how many times a lane lets other goroutines run before
// it claims while some of its slots are busy: jobs that ended together
// free their slots in that time, at a cost of microseconds.
const gatherYields = 3

// lanePace is what a lane has seen of its claims and jobs: moving averages
// of how long a claim took, from sending it to its reply, and how long a
// job held its slot, from its launch to the release of its slot: the end
// of its command, or the recording of its outcome when the job has hooks
// or the worker's outcomes already wait at their bound (so back-pressure
// from the store counts as run time). It decides whether waiting for busy slots
// pays (see gatherWait). The lane's mutex guards it.
type lanePace struct {
	claim, run time.Duration
}

// paceShift sets the weight of a new sample in the averages: 1/8.
const paceShift = 3

// claimed notes one claim's round trip; the caller holds the lane's mutex.
func (p *lanePace) claimed(d time.Duration) { average(&p.claim, d) }

// ran notes one job's time in its slot; the caller holds the lane's mutex.
func (p *lanePace) ran(d time.Duration) { average(&p.run, d) }

// refillsAtOnce reports whether the lane claims for a freed slot without
// waiting for its busy ones (gatherWait is zero); the caller holds the
// lane's mutex. Such a freed slot's claim is due at once, and joins the
// outcome of the job that freed it in one transaction: with `sh -c true`
// jobs on two slots of one SQLite worker, 1.01 write transactions per job
// instead of 1.77, 0.88 × the worker's CPU per job and 1.10 × the rate
// (docs/benchmarks.md, "A freed slot's claim joins its job's outcome").
func (p *lanePace) refillsAtOnce() bool { return p.run >= p.claim }

// average moves the moving average *avg towards d; the first sample sets it.
func average(avg *time.Duration, d time.Duration) {
	if *avg == 0 {
		*avg = d
		return
	}
	*avg += (d - *avg) >> paceShift
}

// gatherWait is how long a lane with busy slots waits for them before it
// claims: batchWait when its jobs take less time than its claims, so that
// the slots about to free are worth a claim's wait, and none otherwise.
// Jobs that end faster than a claim completes (no-op jobs, or jobs far
// shorter than a PostgreSQL round trip) free their slots in bursts, and
// one claim for all of them costs less than one each. Jobs that take
// longer than a claim would leave a freed slot idle: on SQLite, with
// `sh -c true` jobs on two slots of one process, waiting for the other
// slot ran the two in step, each claim idling a core, and refilling each
// slot as it freed raised the rate 1.08–1.18 × (docs/benchmarks.md, "A slot
// waits for the others only when jobs are shorter than claims").
func (p *lanePace) gatherWait(mu *sync.Mutex) time.Duration {
	mu.Lock()
	defer mu.Unlock()
	if p.refillsAtOnce() {
		return 0
	}
	return batchWait
}

// gatherFreeSlots waits, at most wait, until none of the lane's slots is
// busy, so that slots freed in a burst are refilled by one claim instead of
// one claim each. A lane calls it when a slot frees and right after a claim
// that filled every free slot: jobs shorter than a claim's round trip end
// while their claim's reply is being read, and a lane that claimed again at
// once took only those (with no-op jobs on PostgreSQL, 8 slots, three
// rounds of BenchmarkEngineNoop: 7.9 jobs per claim instead of 5.0, 1.2 ×
// the rate). Waiting for every slot rather than half of them: 4.9 jobs per
// claim instead of 4.0 and 1.2 × the rate. It first yields gatherYields
// times, which costs microseconds; with wait 0 it returns then. The price
// of a wait is at most wait more before a partly busy lane's free slots
// take jobs. An idle lane (every slot free) never waits.
func gatherFreeSlots(ctx context.Context, wait time.Duration, freed chan struct{}, busy func() int) {
	for range gatherYields {
		if busy() == 0 {
			return
		}
		runtime.Gosched()
	}
	if wait <= 0 || busy() == 0 {
		return
	}
	t := time.NewTimer(wait)
	defer t.Stop()
	for {
		select {
		case <-freed:
			if busy() == 0 {
				return
			}
		case <-t.C:
			return
		case <-ctx.Done():
			return
		}
	}
}

// retryDelay backs off store errors: 100ms, 200ms … up to 5s.
func retryDelay(failures int) time.Duration {
	d := 100 * time.Millisecond << min(failures-1, 6)
	return min(d, 5*time.Second)
}

// heldRecheck is how long a lane waits before it claims again when a job
// was due but the claim left it: its queue is at its max_running or
// rate_limit (or another claimer had it locked). A freed slot elsewhere
// sends no wake-up, so the lane looks again this soon.
const heldRecheck = 50 * time.Millisecond

// untilNextRun is how long an idle lane may sleep: until the earliest
// future run_at, but no longer than the poll interval.
func (s *slotLanes) untilNextRun(ctx context.Context, l Lane, claimedAt time.Time) time.Duration {
	next, err := s.store.NextRunAt(ctx, l.Queues)
	if err != nil || next.IsZero() {
		return s.poll
	}
	if !next.After(claimedAt) {
		return min(heldRecheck, s.poll)
	}
	d := next.Sub(s.clock.Now()) + time.Millisecond
	return max(min(d, s.poll), time.Millisecond)
}

// claim claims up to n jobs for l. sent is when the claim was sent, on this
// process's monotonic clock: the leases it took run from no earlier.
func (s *slotLanes) claim(ctx context.Context, l Lane, n int, due *dueFlag) (jobs []*Job, sent time.Time, err error) {
	if err := ctx.Err(); err != nil {
		due.clear()
		return nil, time.Time{}, err
	}
	// Once sent, a claim is not cancelled by Stop: a claim that commits on
	// the server while its reply is abandoned would leave jobs processing
	// under this worker, to be charged a lost attempt later.
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	sent, now := time.Now(), s.clock.Now()
	jobs, err = s.claimJobs(cctx, ClaimParams{
		Worker: s.worker, Queues: l.Queues, Limit: n, Now: now, LeaseUntil: now.Add(s.lease),
	}, due)
	if err != nil {
		return nil, sent, err // named by the store: claim jobs, or finish and claim
	}
	return jobs, sent, nil
}
