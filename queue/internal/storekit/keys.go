package storekit

import (
	"fmt"

	"github.com/queuectl/queuectl/queue"
)

// KeyTaken is the error of a retry that would leave two unfinished jobs
// with one unique key: dead job id's key is held by the unfinished job
// other, or, when other is a dead job being retried too (both), would be.
func KeyTaken(id, key, other string, both bool) error {
	if both {
		return fmt.Errorf("jobs %q and %q are dead: %w (both have unique key %q, which one unfinished job may hold: retry one of them)",
			id, other, queue.ErrConflict, key)
	}
	return fmt.Errorf("job %q is dead: %w (its unique key %q is held by job %q)", id, queue.ErrConflict, key, other)
}
