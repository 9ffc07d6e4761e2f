package queue

import (
	"context"
	"runtime"
	"sync"
	"sync/atomic"
	"time"
)

// finisher records attempt outcomes in batches (group commit): outcomes
// that arrive together, or while a batch is being written, share one
// transaction. A lone outcome is written at once; under load batching
// divides the number of transactions by up to maxFinishBatch.
//
// When the store is a FinishClaimer the lanes' claims join the batches
// too. A lane claims at once when a slot frees that it refills at once
// (its last busy slot, or any slot when its jobs outlast its claims), and
// the job that freed it sends its outcome at the same moment: the batch
// waits (at most claimWait) for a claim a lane has due, so that a worker
// whose jobs end one at a time writes once per job instead of twice.
type finisher struct {
	store Store
	both  FinishClaimer // the store, when it is one; else nil
	due   *atomic.Int32 // lanes with a claim due (see dueFlag); nil unless both is set
	busy  atomic.Bool   // a batch is being written
	reqs  chan finishReq
	done  chan struct{}
	log   func(err error, try int)

	startOnce, closeOnce sync.Once
	started              bool
}

const (
	maxFinishBatch = 256
	finishYields   = 3
	// claimWait bounds how long a batch waits for a claim a lane has due
	// (the lane sends it within microseconds), and how long a claim waits
	// for the finisher to take it.
	claimWait = time.Millisecond
)

// finishReq is an outcome to record, or a claim (when claim is set).
type finishReq struct {
	f     Finish
	claim *ClaimParams
	due   *dueFlag // the claiming lane's; cleared once the claim is in a batch
	reply chan finishReply
}

type finishReply struct {
	applied bool
	jobs    []*Job
	err     error
}

func newFinisher(store Store, log func(err error, try int)) *finisher {
	both, _ := store.(FinishClaimer)
	return &finisher{store: store, both: both, reqs: make(chan finishReq), done: make(chan struct{}), log: log}
}

// start starts writing outcomes. It is safe to call twice; once close has
// been called it does nothing.
func (f *finisher) start() {
	f.startOnce.Do(func() {
		f.started = true
		go f.loop()
	})
}

// finish records one outcome and reports whether its claim still held.
func (f *finisher) finish(fin Finish) (bool, error) {
	reply := make(chan finishReply, 1)
	f.reqs <- finishReq{f: fin, reply: reply}
	r := <-reply
	return r.applied, r.err
}

// claim claims jobs in the next batch's transaction. It needs a started
// finisher and a call that ends before close (the engine stops its lanes
// first). It sends the claim only if the store is a FinishClaimer, no
// batch is being written (whose retries can last 30 s and more) and the
// finisher takes it within claimWait: sent is false when it did not, and
// the caller claims on its own. Like a direct claim, once sent it is not
// cancelled: it gets the batch's one try of at most 30 s.
func (f *finisher) claim(p ClaimParams, due *dueFlag) (jobs []*Job, sent bool, err error) {
	if f.both == nil || f.busy.Load() {
		return nil, false, nil
	}
	req := finishReq{claim: &p, due: due, reply: make(chan finishReply, 1)}
	select {
	case f.reqs <- req:
	default:
		t := time.NewTimer(claimWait)
		defer t.Stop()
		select {
		case f.reqs <- req:
		case <-t.C:
			return nil, false, nil
		}
	}
	r := <-req.reply
	return r.jobs, true, r.err
}

// claimDue reports whether a lane is about to send a claim.
func (f *finisher) claimDue() bool { return f.due != nil && f.due.Load() > 0 }

// close stops the loop once the requests already sent are written. It is
// safe to call twice, and before start (which then never starts).
func (f *finisher) close() {
	f.startOnce.Do(func() {}) // a later start does nothing
	f.closeOnce.Do(func() {
		close(f.reqs)
		if f.started {
			<-f.done
		}
	})
}

func (f *finisher) loop() {
	defer close(f.done)
	for first := range f.reqs {
		f.writeBatch(f.gather(first))
	}
}

// gather takes what else has finished. Yielding a few times lets jobs
// that ended together (and are about to send) join the batch; it costs a
// lone outcome microseconds, where a timer would cost a tick. While a
// lane has a claim due it waits for that claim, for at most claimWait.
func (f *finisher) gather(first finishReq) []finishReq {
	batch := []finishReq{first}
	first.taken()
	var timer *time.Timer
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	for yields := 0; len(batch) < maxFinishBatch; {
		var r finishReq
		var ok bool
		select {
		case r, ok = <-f.reqs:
		default:
			if yields < finishYields {
				yields++
				runtime.Gosched()
				continue
			}
			if !f.claimDue() {
				return batch
			}
			if timer == nil {
				timer = time.NewTimer(claimWait)
			}
			select {
			case r, ok = <-f.reqs:
			case <-timer.C:
				return batch
			}
		}
		if !ok {
			return batch
		}
		r.taken()
		batch = append(batch, r)
	}
	return batch
}

// taken notes that a claim is in a batch: its lane's claim is no longer due.
func (r finishReq) taken() {
	if r.due != nil {
		r.due.clear()
	}
}

// writeBatch writes one batch and answers each request in it. busy is
// set while it writes.
func (f *finisher) writeBatch(batch []finishReq) {
	f.busy.Store(true)
	var outcomes, claims []finishReq
	for _, r := range batch {
		if r.claim != nil {
			claims = append(claims, r)
		} else {
			outcomes = append(outcomes, r)
		}
	}
	fs := make([]Finish, len(outcomes))
	for i, r := range outcomes {
		fs[i] = r.f
	}
	applied, err := f.writeWithClaims(fs, claims)
	f.busy.Store(false)
	for i, r := range outcomes {
		if err != nil {
			r.reply <- finishReply{err: err}
		} else {
			r.reply <- finishReply{applied: applied[i]}
		}
	}
}

// writeWithClaims writes the outcomes fs, with claims when there are any,
// and answers the claims. The claims are tried once, with the outcomes;
// should that fail, the claims get the error (their lanes retry) and the
// outcomes are written on their own. busy is cleared before the claims
// are answered (a lane answered may claim again at once, and should not
// find it set) unless the outcomes are still to be written.
func (f *finisher) writeWithClaims(fs []Finish, claims []finishReq) ([]bool, error) {
	if len(claims) == 0 {
		return f.write(fs)
	}
	cs := make([]ClaimParams, len(claims))
	for i, r := range claims {
		cs[i] = *r.claim
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	applied, jobs, err := f.both.FinishAndClaim(ctx, fs, cs)
	cancel()
	if err == nil || len(fs) == 0 {
		f.busy.Store(false)
	}
	for i, r := range claims {
		if err != nil {
			r.reply <- finishReply{err: err}
		} else {
			r.reply <- finishReply{jobs: jobs[i]}
		}
	}
	if err != nil && len(fs) > 0 {
		return f.write(fs)
	}
	return applied, err
}

// write retries a failed batch for up to 30 s (a busy or restarting
// database); after that the jobs are left to the rescue path.
func (f *finisher) write(fs []Finish) ([]bool, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for try := 1; ; try++ {
		applied, err := f.store.FinishJobs(ctx, fs)
		if err == nil || ctx.Err() != nil {
			return applied, err
		}
		f.log(err, try)
		select {
		case <-time.After(retryDelay(try)):
		case <-ctx.Done():
			return nil, err
		}
	}
}
