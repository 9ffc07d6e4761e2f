package queue

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// ImportChunk is the number of jobs a bulk import stores per transaction:
// small enough that the write lock is held for a fraction of a second (so
// workers keep renewing their leases), large enough that transactions cost
// little.
const ImportChunk = 10_000

// Import is a bulk insert in progress (Store.BeginImport). Its jobs are
// stored chunk by chunk, each chunk in its own transaction, but stay
// invisible (not claimed, listed, counted or shown) until Commit makes
// them all visible; Abort, or the death of the importing process before
// Commit, leaves nothing.
type Import interface {
	// Stage stores a chunk of resolved jobs, hidden. An id already taken,
	// by a stored job, one staged earlier or one earlier in the chunk,
	// fails with ErrDuplicate naming it: this call, or, where a chunk is
	// stored while the caller reads the next (a chunk of plain jobs, on
	// either store), the next Stage or the Commit, whose error then wraps
	// ErrEarlierChunk too. The import should then be aborted (the failure
	// is reported again until it is). Staging no jobs writes nothing: it
	// waits for the chunk before it and reports that chunk's failure. ctx
	// must stay live until the next Stage, Commit or Abort: a chunk
	// written in the background uses it.
	Stage(ctx context.Context, jobs []*Job) error
	// Commit makes every staged job pending, durably, and ends the import.
	Commit(ctx context.Context) error
	// Abort drops the staged jobs and ends the import. After Commit it
	// does nothing.
	Abort(ctx context.Context) error
}

// ErrEarlierChunk marks an error of Stage or Commit that is about the
// chunk staged before, not the one in hand: an import that stores a chunk
// while its caller reads the next reports that chunk's failure then.
var ErrEarlierChunk = errors.New("the chunk staged before")

// OneTransactionImports is implemented by stores whose Import is one
// database transaction (PostgreSQL): what it stages is seen by no other
// session, and Abort, or the importer's death, leaves the database as it
// was. An importer of such a store needs no first pass over its input to
// check every job before it stages any: a bad job met while staging aborts
// the import, with nothing stored. (SQLite's import writes each chunk in a
// transaction of its own, so a late bad job would cost every earlier
// chunk's writes and their removal.)
type OneTransactionImports interface {
	ImportIsOneTransaction() bool
}

// ImportsAlone is implemented by stores whose imports can deadlock with
// each other (PostgreSQL: each is one transaction, taking unique keys in
// its file's order). BeginImportAlone begins an import that starts once
// every import in progress has ended and that no other import runs
// beside: an import rolled back for a deadlock (ErrRolledBack) made again
// that way cannot meet another import again.
type ImportsAlone interface {
	BeginImportAlone(ctx context.Context) (Import, error)
}

// Resolver resolves jobs as Enqueue does, against a store's defaults and
// per-queue overrides read once.
type Resolver struct {
	base   Settings
	queues map[string]Overrides
	now    time.Time
}

// NewResolver reads the store's defaults; queues are the per-queue
// overrides (QueueOverrides).
func NewResolver(ctx context.Context, st Store, queues map[string]Overrides, now time.Time) (*Resolver, error) {
	kv, err := st.GetConfig(ctx)
	if err != nil {
		return nil, fmt.Errorf("read config: %w", err)
	}
	base, err := SettingsFrom(kv)
	if err != nil {
		return nil, fmt.Errorf("read config: %w", err)
	}
	return &Resolver{base: base, queues: queues, now: now}, nil
}

// Resolve validates n and turns it into a pending job.
func (r *Resolver) Resolve(n NewJob) (*Job, error) {
	q := n.Queue
	if q == "" {
		q = DefaultQueue
	}
	n.Hooks = n.Hooks.Or(r.queues[q].Hooks) // the job's own hooks win over its queue's
	return n.Resolve(r.queues[q].Apply(r.base), r.now)
}
