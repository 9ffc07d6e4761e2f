package storekit

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/queuectl/queuectl/queue"
)

// LaterTx is implemented by an import's transaction (queue.Import): a job
// it stages may run after a job neither stored nor staged yet, which the
// import may stage later (a file listing a job before the jobs it runs
// after, as list --json does). Insert stages such a job waiting and calls
// Later; the import's commit then runs CheckLater.
type LaterTx interface {
	Later()
}

// CheckLaterTx is what CheckLater needs from an import's transaction.
type CheckLaterTx interface {
	// MissingDeps returns the (job, dependency) pairs of the import's
	// jobs whose dependency names no job, stored or staged by the import.
	MissingDeps(ctx context.Context) ([][2]string, error)
	// Repoint makes job run after holder instead of dep.
	Repoint(ctx context.Context, job, dep, holder string) error
	// Edges returns the (job, dependency) pairs of the import's jobs
	// whose dependency is a job of the import too.
	Edges(ctx context.Context) ([][2]string, error)
}

// CheckLater checks, as an import whose jobs named jobs not staged yet
// commits, that every job its jobs run after exists now: one not added
// because its unique key was held (aliases) is replaced by its holder;
// any other fails the import (a queue.JobError naming the job, wrapping
// queue.ErrInvalid), as does a cycle among the import's jobs, which would
// wait for each other for ever. It holds the import's dependency edges
// in memory.
func CheckLater(ctx context.Context, tx CheckLaterTx, aliases *Aliases) error {
	missing, err := tx.MissingDeps(ctx)
	if err != nil {
		return err
	}
	for _, m := range missing {
		holder, ok := "", false
		if aliases != nil {
			holder, ok = aliases.m[m[1]]
		}
		if !ok {
			return &queue.JobError{ID: m[0], Err: fmt.Errorf("%w: after: no job %q", queue.ErrInvalid, m[1])}
		}
		if err := tx.Repoint(ctx, m[0], m[1], holder); err != nil {
			return err
		}
	}
	edges, err := tx.Edges(ctx)
	if err != nil {
		return err
	}
	if cycle := findCycle(edges); cycle != nil {
		return &queue.JobError{ID: cycle[0], Err: fmt.Errorf("%w: after: the jobs wait for each other: %s",
			queue.ErrInvalid, describeCycle(cycle))}
	}
	return nil
}

// describeCycle names the jobs of a cycle (its first again at the end):
// all of a short one, the ends of a long one and how many it holds.
func describeCycle(cycle []string) string {
	const ends = 3
	q := quoted(cycle)
	if len(q) <= 2*ends+1 {
		return strings.Join(q, " runs after ")
	}
	return fmt.Sprintf("%s runs after … runs after %s (%d jobs)", strings.Join(q[:ends], " runs after "),
		strings.Join(q[len(q)-ends:], " runs after "), len(cycle)-1)
}

// findCycle returns the jobs of one cycle of edges (job, dependency),
// its first job again at the end, or nil when there is none: it peels off
// the jobs that wait for no job left (Kahn), then walks from a job that
// remains, each of which waits for another that remains.
func findCycle(edges [][2]string) []string {
	deps := map[string][]string{}
	waiting := map[string]int{} // job → its dependencies not peeled off
	dependents := map[string][]string{}
	for _, e := range edges {
		deps[e[0]] = append(deps[e[0]], e[1])
		waiting[e[0]]++
		if _, ok := waiting[e[1]]; !ok {
			waiting[e[1]] = 0
		}
		dependents[e[1]] = append(dependents[e[1]], e[0])
	}
	var free []string
	for id, n := range waiting {
		if n == 0 {
			free = append(free, id)
		}
	}
	for len(free) > 0 {
		id := free[len(free)-1]
		free = free[:len(free)-1]
		delete(waiting, id)
		for _, d := range dependents[id] {
			if waiting[d]--; waiting[d] == 0 {
				free = append(free, d)
			}
		}
	}
	if len(waiting) == 0 {
		return nil
	}
	start := ""
	for id := range waiting {
		if start == "" || id < start {
			start = id // the same cycle whatever the map's order
		}
	}
	seen := map[string]int{}
	var path []string
	for id := start; ; {
		if i, ok := seen[id]; ok {
			return append(path[i:], id)
		}
		seen[id] = len(path)
		path = append(path, id)
		next := ""
		for _, d := range deps[id] {
			if _, left := waiting[d]; left && (next == "" || d < next) {
				next = d
			}
		}
		id = next
	}
}

func quoted(ids []string) []string {
	out := slices.Clone(ids)
	for i, id := range out {
		out[i] = fmt.Sprintf("%q", id)
	}
	return out
}
