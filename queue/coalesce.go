package queue

import (
	"context"
	"errors"
	"slices"
	"sync"
)

// maxCoalesced bounds the jobs one merged InsertJobs call stores, so that
// its transaction holds the store's write lock about as long as a worker's
// batch of outcomes does. A call with more jobs than this goes alone.
const maxCoalesced = 512

// CoalesceInserts returns st with InsertJobs calls that overlap in time
// merged into calls of st's, a group commit: while one group's
// transaction runs, the calls that arrive wait, and the first of them then
// stores a group of them (up to maxCoalesced jobs) in one transaction and
// hands the lead on. A lone call goes straight through, so nothing waits
// for company. A process that enqueues on many goroutines at once (the
// HTTP API) then takes the write lock once per group instead of once per
// job, and waits behind other processes' writers once per group too.
//
// Each call keeps InsertJobs' contract: it returns once its own jobs are
// stored durably, or with an error and none of them stored. Calls in one
// group are stored in the order they arrived, as if one after another:
// ids, unique keys and dependencies between them resolve as they would in
// turn. When a group fails because of a job (a taken id, a missing
// dependency, a conflict), each of its calls is stored again alone, so
// that only the call with the bad job fails; any other failure (the
// database) is every call's. A call whose context ends while it waits
// for its group leaves without storing anything; once its group is being
// stored it waits for the outcome, and the group's transaction is
// abandoned only when the context of every call in it has ended.
func CoalesceInserts(st Store) *Coalescing {
	return &Coalescing{Store: st}
}

// Coalescing is a Store whose InsertJobs calls that overlap in time are
// stored together (CoalesceInserts).
type Coalescing struct {
	Store

	mu      sync.Mutex
	pending []*insertCall // calls waiting for a group, in order
	busy    bool          // a group is being stored; pending waits for it
}

type insertCall struct {
	ctx  context.Context
	jobs []*Job
	done chan insertDone // one message at a time: lead, then the result
}

type insertDone struct {
	err  error
	lead bool // store the next group, then wait for the result
}

// InsertJobs stores jobs, merged with the calls that overlap it.
func (c *Coalescing) InsertJobs(ctx context.Context, jobs []*Job) error {
	if len(jobs) == 0 {
		return nil
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if len(jobs) > maxCoalesced {
		return c.Store.InsertJobs(ctx, jobs)
	}
	call := &insertCall{ctx: ctx, jobs: jobs, done: make(chan insertDone, 1)}
	c.mu.Lock()
	c.pending = append(c.pending, call)
	lead := !c.busy
	c.busy = true
	c.mu.Unlock()
	for {
		if lead {
			c.storeGroup()
		}
		var d insertDone
		select {
		case d = <-call.done:
		case <-ctx.Done():
			if c.leave(call) {
				return ctx.Err()
			}
			d = <-call.done // in a group: its jobs may be stored
		}
		if !d.lead {
			return d.err
		}
		lead = true
	}
}

// Waiting reports how many calls wait for a group.
func (c *Coalescing) Waiting() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.pending)
}

// leave takes a call whose context ended out of pending, passing on the
// lead if it had been handed it. It reports false when the call is no
// longer pending: a group has it, and it must wait for the outcome.
func (c *Coalescing) leave(call *insertCall) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	i := slices.Index(c.pending, call)
	if i < 0 {
		return false
	}
	c.pending = slices.Delete(c.pending, i, i+1)
	select {
	case <-call.done: // the lead, sent while the call was first in line
		c.handOn()
	default:
	}
	return true
}

// handOn gives the lead to the first pending call, or ends the busy spell.
// The caller holds c.mu.
func (c *Coalescing) handOn() {
	if len(c.pending) > 0 {
		c.pending[0].done <- insertDone{lead: true}
	} else {
		c.busy = false
	}
}

// storeGroup stores the pending calls at the front, the leader's own
// first, then hands the lead on: the leader stores one group, so its own
// call never waits behind later ones.
func (c *Coalescing) storeGroup() {
	c.mu.Lock()
	n, size := 0, 0
	for n < len(c.pending) && (n == 0 || size+len(c.pending[n].jobs) <= maxCoalesced) {
		size += len(c.pending[n].jobs)
		n++
	}
	group := slices.Clone(c.pending[:n])
	clear(c.pending[:n]) // the group's jobs are not kept reachable from here
	c.pending = c.pending[n:]
	c.mu.Unlock()

	answered := false
	defer func() {
		// A panicking store must not leave the others waiting for a
		// lead that never comes.
		if !answered {
			for _, call := range group {
				call.done <- insertDone{err: errors.New("insert jobs: the store failed")}
			}
		}
		c.mu.Lock()
		c.handOn()
		c.mu.Unlock()
	}()
	errs := c.insertGroup(group)
	for i, call := range group {
		call.done <- insertDone{err: errs[i]}
	}
	answered = true
}

// insertGroup stores the group's jobs in one call, or, when that fails
// because of a job and the group has several calls, each call's alone.
func (c *Coalescing) insertGroup(group []*insertCall) []error {
	errs := make([]error, len(group))
	if len(group) == 1 {
		errs[0] = c.Store.InsertJobs(group[0].ctx, group[0].jobs)
		return errs
	}
	if afterKeyedOfAnother(group) {
		for i, call := range group {
			errs[i] = c.Store.InsertJobs(call.ctx, call.jobs)
		}
		return errs
	}
	all := make([]*Job, 0, maxCoalesced)
	for _, call := range group {
		all = append(all, call.jobs...)
	}
	ctx, stop := groupContext(group)
	err := c.Store.InsertJobs(ctx, all)
	stop()
	if err == nil {
		return errs
	}
	if !jobCaused(err) {
		for i := range errs {
			errs[i] = err
		}
		return errs
	}
	for _, j := range all {
		j.ExistingID = "" // set by the failed call for jobs it got to
	}
	for i, call := range group {
		errs[i] = c.Store.InsertJobs(call.ctx, call.jobs)
	}
	return errs
}

// afterKeyedOfAnother reports whether a job of the group runs after a job
// with a unique key of another call of it. Such calls are stored one by
// one: within one InsertJobs call, a job after a job not added (its key
// held) runs after the holder, which must not happen across calls, stored
// as if one after another.
func afterKeyedOfAnother(group []*insertCall) bool {
	var keyed map[string]int // id of a job with a unique key: its call
	for i, call := range group {
		for _, j := range call.jobs {
			for _, id := range j.After {
				if k, ok := keyed[id]; ok && k != i {
					return true
				}
			}
		}
		for _, j := range call.jobs {
			if j.UniqueKey != "" {
				if keyed == nil {
					keyed = map[string]int{}
				}
				keyed[j.ID] = i
			}
		}
	}
	return false
}

// groupContext is the context of a group's transaction: no one caller's
// cancellation may abandon the others' jobs, so it ends only once every
// caller's context has ended.
func groupContext(group []*insertCall) (context.Context, func()) {
	ctx, cancel := context.WithCancel(context.WithoutCancel(group[0].ctx))
	var mu sync.Mutex
	left := len(group)
	stops := make([]func() bool, len(group))
	for i, call := range group {
		stops[i] = context.AfterFunc(call.ctx, func() {
			mu.Lock()
			defer mu.Unlock()
			if left--; left == 0 {
				cancel()
			}
		})
	}
	return ctx, func() {
		for _, stop := range stops {
			stop()
		}
		cancel()
	}
}

// jobCaused reports whether InsertJobs failed because of one of its jobs,
// so that storing the calls apart can succeed for the others.
func jobCaused(err error) bool {
	return errors.Is(err, ErrDuplicate) || errors.Is(err, ErrInvalid) || errors.Is(err, ErrConflict)
}
