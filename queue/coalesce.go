package queue

import (
	"context"
	"sync"
)

// maxCoalesced bounds the jobs one merged InsertJobs call stores, so that
// its transaction holds the store's write lock about as long as a worker's
// batch of outcomes does. A call with more jobs than this goes alone.
const maxCoalesced = 512

// CoalesceInserts returns st with InsertJobs calls that overlap in time
// merged into one call of st's, a group commit: while one call's
// transaction runs, the calls that arrive wait, and the first of them then
// stores all of them in one transaction. A lone call goes straight
// through, so nothing waits for company. A process that enqueues on many
// goroutines at once (the HTTP API) then takes the write lock once per
// group instead of once per job, and waits behind other processes' writers
// once per group too.
//
// Each call keeps InsertJobs' contract: it returns once its own jobs are
// stored durably, or with an error and none of them stored. When a merged
// call fails, each of its calls is retried alone, so one call's bad job
// (a taken id, a missing dependency) fails that call only. Calls in one
// group are stored in the order they arrived, as if one after another:
// ids, unique keys and dependencies between them resolve as they would
// in turn.
func CoalesceInserts(st Store) *Coalescing {
	return &Coalescing{Store: st}
}

// Coalescing is a Store whose InsertJobs calls that overlap in time are
// stored together (CoalesceInserts).
type Coalescing struct {
	Store

	mu      sync.Mutex
	pending []*insertCall // calls waiting for the next group, in order
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
		d := <-call.done
		if !d.lead {
			return d.err
		}
		lead = true
	}
}

// Waiting reports how many calls wait for a group being stored.
func (c *Coalescing) Waiting() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.pending)
}

// storeGroup stores the pending calls at the front, the leader's own
// first, then hands the lead to the next pending call, if any: the leader
// stores one group, so its own call never waits behind later ones.
func (c *Coalescing) storeGroup() {
	c.mu.Lock()
	n, size := 0, 0
	for n < len(c.pending) && (n == 0 || size+len(c.pending[n].jobs) <= maxCoalesced) {
		size += len(c.pending[n].jobs)
		n++
	}
	group := c.pending[:n:n]
	c.pending = c.pending[n:]
	c.mu.Unlock()

	errs := c.insertGroup(group)
	for i, call := range group {
		call.done <- insertDone{err: errs[i]}
	}

	c.mu.Lock()
	if len(c.pending) > 0 {
		c.pending[0].done <- insertDone{lead: true}
	} else {
		c.busy = false
	}
	c.mu.Unlock()
}

// insertGroup stores the group's jobs in one call, or, when that fails
// and the group has several calls, each call's alone.
func (c *Coalescing) insertGroup(group []*insertCall) []error {
	errs := make([]error, len(group))
	if len(group) == 1 {
		errs[0] = c.Store.InsertJobs(group[0].ctx, group[0].jobs)
		return errs
	}
	all := make([]*Job, 0, maxCoalesced)
	for _, call := range group {
		all = append(all, call.jobs...)
	}
	// The group's transaction is everyone's: no one caller's cancellation
	// may abandon the others' jobs.
	if c.Store.InsertJobs(context.WithoutCancel(group[0].ctx), all) == nil {
		return errs
	}
	for i, call := range group {
		errs[i] = c.Store.InsertJobs(call.ctx, call.jobs)
	}
	return errs
}
