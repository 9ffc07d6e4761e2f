package queue

import (
	"context"
	"runtime"
	"sync"
	"time"
)

// finisher records attempt outcomes in batches (group commit): outcomes
// that arrive together, or while a batch is being written, share one
// transaction. A lone outcome is written at once; under load batching
// divides the number of transactions by up to maxFinishBatch.
type finisher struct {
	store Store
	reqs  chan finishReq
	done  chan struct{}
	log   func(err error, try int)

	startOnce, closeOnce sync.Once
	started              bool
}

const (
	maxFinishBatch = 256
	finishYields   = 3
)

type finishReq struct {
	f     Finish
	reply chan finishReply
}

type finishReply struct {
	applied bool
	err     error
}

func newFinisher(store Store, log func(err error, try int)) *finisher {
	return &finisher{store: store, reqs: make(chan finishReq), done: make(chan struct{}), log: log}
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
	f.reqs <- finishReq{fin, reply}
	r := <-reply
	return r.applied, r.err
}

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
		// Take what else has finished. Yielding a few times lets jobs that
		// ended together (and are about to send) join this batch; it costs
		// a lone outcome microseconds, where a timer would cost a tick.
		batch := []finishReq{first}
	more:
		for yields := 0; len(batch) < maxFinishBatch; {
			select {
			case r, ok := <-f.reqs:
				if !ok {
					break more
				}
				batch = append(batch, r)
			default:
				if yields == finishYields {
					break more
				}
				yields++
				runtime.Gosched()
			}
		}
		fs := make([]Finish, len(batch))
		for i, r := range batch {
			fs[i] = r.f
		}
		applied, err := f.write(fs)
		for i, r := range batch {
			if err != nil {
				r.reply <- finishReply{err: err}
			} else {
				r.reply <- finishReply{applied: applied[i]}
			}
		}
	}
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
