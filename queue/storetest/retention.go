package storetest

import (
	"fmt"
	"testing"
	"time"

	"github.com/queuectl/queuectl/queue"
)

// testRetention: deletes and output pruning in bounded batches, dry runs
// that change nothing, and the Pruner applying a policy state by state.
func testRetention(t *testing.T, open Opener) {
	s := open(t)
	for i := range 5 {
		insert(t, s, job(t, fmt.Sprintf("done%d", i), nil))
	}
	insert(t, s, job(t, "dead", func(n *queue.NewJob) { zero := 0; n.MaxRetries = &zero; n.Priority = -1 }), job(t, "waiting", func(n *queue.NewJob) { n.Priority = -2 }))
	for range 5 {
		j := claim(t, s, "w", 1, t0)[0]
		finish(t, s, j, "w", succeeded(t0, "some output\n"), t0)
	}
	j := claim(t, s, "w", 1, t0)[0]
	finish(t, s, j, "w", failed(t0), t0)
	later := t0.Add(2 * time.Hour)

	if n, err := s.PruneOutput(ctx(t), queue.PruneOutputParams{Before: later, DryRun: true}); err != nil || n != 5 {
		t.Fatalf("prune output dry run: %d %v", n, err)
	}
	if n, err := s.PruneOutput(ctx(t), queue.PruneOutputParams{Before: later, Limit: 2}); err != nil || n != 2 {
		t.Fatalf("prune output, batch of 2: %d %v", n, err)
	}
	if n, err := s.DeleteJobs(ctx(t), queue.DeleteParams{Before: later, DryRun: true}); err != nil || n != 6 {
		t.Fatalf("delete dry run: %d %v", n, err)
	}
	if n, err := s.DeleteJobs(ctx(t), queue.DeleteParams{Before: later, States: []queue.State{queue.StateCompleted}, Limit: 2}); err != nil || n != 2 {
		t.Fatalf("delete, batch of 2: %d %v", n, err)
	}

	p := queue.NewPruner(s, queue.PrunerConfig{
		Retention: queue.Retention{Completed: time.Hour, Output: time.Hour},
		Batch:     2,
		Now:       func() time.Time { return later },
	})
	res, err := p.PruneOnce(ctx(t))
	if err != nil || res.Jobs[queue.StateCompleted] != 3 || res.Jobs[queue.StateDead] != 0 {
		t.Fatalf("prune: %+v %v", res, err)
	}
	left, err := s.ListJobs(ctx(t), queue.ListParams{})
	if err != nil || len(left) != 2 {
		t.Fatalf("left after pruning: %d %v", len(left), err)
	}
	// The dead job's history stays, its (empty) output is pruned too.
	if h, _ := s.Attempts(ctx(t), "dead"); len(h) != 1 {
		t.Fatalf("history of the kept dead job: %+v", h)
	}
	if n, err := s.PruneOutput(ctx(t), queue.PruneOutputParams{Before: later, DryRun: true}); err != nil || n != 0 {
		t.Fatalf("output left after pruning: %d %v", n, err)
	}
	if res, err := p.PruneOnce(ctx(t)); err != nil || len(res.Jobs) != 0 || res.Outputs != 0 {
		t.Fatalf("a second pass found more: %+v %v", res, err)
	}
}
