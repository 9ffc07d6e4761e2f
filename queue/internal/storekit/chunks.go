package storekit

import (
	"context"
	"fmt"
	"slices"

	"github.com/queuectl/queuectl/queue"
)

// Chunks is an import's staging of chunks (queue.Import.Stage): a chunk
// of plain jobs is written in the background while the caller reads the
// next, one chunk at a time, so the import's transaction or connection is
// never used by two goroutines. The zero value is ready.
type Chunks struct {
	// writing delivers the outcome of the chunk in flight; nil when none
	// is.
	writing chan error
	// failed is the first chunk's failure: kept, so that an import that
	// goes on after it (a Commit that should have been an Abort) fails
	// again rather than committing without that chunk.
	failed error
}

// Wait waits for the chunk in flight and returns the first failure of
// any chunk.
func (c *Chunks) Wait() error {
	if c.writing != nil {
		if err := <-c.writing; c.failed == nil {
			c.failed = err
		}
		c.writing = nil
	}
	return c.failed
}

// Stage implements the rule of queue.Import.Stage: it waits for the chunk
// before (its error wraps queue.ErrEarlierChunk), then writes jobs with
// plain in the background when every job is plain, or with shaped before
// it returns when one has a unique key or dependencies (the caller reads
// each job's ExistingID after Stage). No jobs: it only waits. A chunk
// written in the background uses ctx, which must stay live until the next
// Stage, Commit or Abort.
func (c *Chunks) Stage(ctx context.Context, jobs []*queue.Job, plain, shaped func(context.Context, []*queue.Job) error) error {
	all := true
	for _, j := range jobs {
		j.ExistingID = ""
		all = all && Plain(j)
	}
	if err := c.Wait(); err != nil {
		return fmt.Errorf("stage jobs: %w: %w", queue.ErrEarlierChunk, err)
	}
	if len(jobs) == 0 {
		return nil
	}
	if !all {
		if err := shaped(ctx, jobs); err != nil {
			c.failed = err
			return fmt.Errorf("stage jobs: %w", err)
		}
		return nil
	}
	jobs = slices.Clone(jobs) // the caller reuses its slice for the next chunk
	done := make(chan error, 1)
	c.writing = done
	go func() { done <- plain(ctx, jobs) }()
	return nil
}
