package postgres_test

import (
	"testing"
	"time"

	"github.com/queuectl/queuectl/queue"
	"github.com/queuectl/queuectl/queue/postgres"
)

// A batch's finishes are one statement, but two finishes of one job in a
// batch (a worker's and a rescuer's) still apply one after the other: the
// first wins, the second finds the claim gone, and one history row is
// written.
func TestFinishBatchWithTwoFinishesOfOneJob(t *testing.T) {
	_, u := newSchema(t)
	s := open(t, u)
	ctx := tctx(t)
	now := time.Now().UTC()
	claimed := insertAndClaim(t, s, "w", now, "a", "b")
	code := 0
	end := queue.End{Outcome: queue.OutcomeSucceeded, ExitCode: &code, Started: now, Finished: now}
	a, b := queue.RetryPolicy{}.Decide(claimed[0], "w", end, now), queue.RetryPolicy{}.Decide(claimed[1], "w", end, now)
	applied, err := s.FinishJobs(ctx, []queue.Finish{a, b, a})
	if err != nil {
		t.Fatal(err)
	}
	if !applied[0] || !applied[1] || applied[2] {
		t.Fatalf("applied %v, want [true true false]", applied)
	}
	for _, j := range claimed {
		hist, err := s.Attempts(ctx, j.ID)
		if err != nil || len(hist) != 1 {
			t.Fatalf("%s: %d history rows (%v), want 1", j.ID, len(hist), err)
		}
		got, err := s.GetJob(ctx, j.ID)
		if err != nil || got.State != queue.StateCompleted {
			t.Fatalf("%s: %+v %v, want completed", j.ID, got, err)
		}
	}
}

// insertAndClaim inserts jobs with these ids and claims them all for
// worker, with an hour's lease from now.
func insertAndClaim(t *testing.T, s *postgres.Store, worker string, now time.Time, ids ...string) []*queue.Job {
	t.Helper()
	var jobs []*queue.Job
	for _, id := range ids {
		jobs = append(jobs, newJob(t, id))
	}
	if err := s.InsertJobs(tctx(t), jobs); err != nil {
		t.Fatal(err)
	}
	claimed, err := s.ClaimJobs(tctx(t), queue.ClaimParams{Worker: worker, Limit: len(ids), Now: now.Add(time.Second), LeaseUntil: now.Add(time.Hour)})
	if err != nil || len(claimed) != len(ids) {
		t.Fatalf("claim: %d jobs, %v", len(claimed), err)
	}
	return claimed
}
