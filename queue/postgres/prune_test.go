package postgres_test

import (
	"context"
	"testing"
	"time"

	"github.com/queuectl/queuectl/queue"
)

// Output pruning checks each row again as its update finds it: a prune
// that waited for another one (every service runs its own pruner) must
// neither count the output the other emptied nor lose the bytes it
// recorded as dropped. Here a transaction holds the job's row, the prune
// waits for it, and the transaction empties the output first.
func TestPruneOutputRechecksRows(t *testing.T) {
	schema, u := newSchema(t)
	s := open(t, u)
	ctx := tctx(t)
	now := time.Now().UTC()
	j := insertAndClaim(t, s, "w", now, "p")[0]
	code := 0
	end := queue.End{Outcome: queue.OutcomeSucceeded, ExitCode: &code, Started: now, Finished: now, Output: []byte("12345")}
	if _, err := s.FinishJobs(ctx, []queue.Finish{queue.RetryPolicy{}.Decide(j, "w", end, now)}); err != nil {
		t.Fatal(err)
	}
	tx, err := connect(t, u).Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(context.Background())
	if _, err := tx.Exec(ctx, `SELECT 1 FROM jobs WHERE id = 'p' FOR UPDATE`); err != nil {
		t.Fatal(err)
	}
	type result struct {
		n   int
		err error
	}
	done := make(chan result, 1)
	go func() {
		n, err := s.PruneOutput(ctx, queue.PruneOutputParams{Before: now.Add(time.Hour)})
		done <- result{n, err}
	}()
	waitFor(t, "the prune waiting for the job's row", 10*time.Second, func() bool {
		return adminQueryInt(t, `SELECT count(*) FROM pg_stat_activity WHERE application_name = $1 AND wait_event_type = 'Lock'`, schema) == 1
	})
	// What a concurrent prune would have done.
	if _, err := tx.Exec(ctx, `UPDATE jobs SET last_dropped = 5, last_output = NULL WHERE id = 'p'`); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	r := <-done
	if r.err != nil || r.n != 0 {
		t.Fatalf("prune after another emptied the output: %d %v, want 0", r.n, r.err)
	}
	hist, err := s.Attempts(ctx, "p")
	if err != nil || len(hist) != 1 || hist[0].Dropped != 5 {
		t.Fatalf("history: %+v %v, want one attempt with 5 bytes dropped", hist, err)
	}
}
