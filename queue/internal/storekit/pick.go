package storekit

import (
	"fmt"

	"github.com/queuectl/queuectl/queue"
)

// PickJobs checks the jobs of a bulk change that is all or nothing (retry,
// discard): ids in the order given, each once; each must exist (state
// reports found false otherwise) and allow must accept its state (rule
// says which states it accepts, for the error). state reads the job's state
// inside the store's transaction.
func PickJobs(ids []string, state func(id string) (s queue.State, found bool, err error),
	allow func(queue.State) bool, rule string) ([]string, error) {
	seen := make(map[string]bool, len(ids))
	out := make([]string, 0, len(ids))
	for _, id := range ids {
		if seen[id] {
			continue
		}
		seen[id] = true
		s, found, err := state(id)
		switch {
		case err != nil:
			return nil, err
		case !found:
			return nil, fmt.Errorf("job %q: %w", id, queue.ErrNotFound)
		case !allow(s):
			return nil, fmt.Errorf("job %q is %s: %w (%s)", id, s, queue.ErrConflict, rule)
		}
		out = append(out, id)
	}
	return out, nil
}
