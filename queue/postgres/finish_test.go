package postgres_test

import (
	"slices"
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

// A job's final attempt is kept on its own row (migration 21): a job that
// ran once has no attempts row, one that failed first has a row for that
// attempt only, and one whose attempt failed for good keeps it on the row
// too. (What reads them back, through a retry too, is in the conformance
// suite.)
func TestFinalAttemptOnJobRow(t *testing.T) {
	_, u := newSchema(t)
	s := open(t, u)
	ctx := tctx(t)
	now := time.Now().UTC()
	claimed := insertAndClaim(t, s, "w", now, "once", "twice", "dead")
	code, bad := 0, 1
	ok := queue.End{Outcome: queue.OutcomeSucceeded, ExitCode: &code, Started: now, Finished: now, Output: []byte("hi\n")}
	failed := queue.End{Outcome: queue.OutcomeFailed, ExitCode: &bad, Error: "exit status 1", Started: now, Finished: now}
	claimed[2].MaxRetries = 0
	fs := []queue.Finish{queue.RetryPolicy{}.Decide(claimed[0], "w", ok, now), queue.RetryPolicy{}.Decide(claimed[1], "w", failed, now),
		queue.RetryPolicy{}.Decide(claimed[2], "w", failed, now)}
	if fs[1].State != queue.StateFailed || fs[2].State != queue.StateDead {
		t.Fatalf("decided %s and %s, want failed and dead", fs[1].State, fs[2].State)
	}
	if _, err := s.FinishJobs(ctx, fs); err != nil {
		t.Fatal(err)
	}
	later := now.Add(time.Hour)
	again, err := s.ClaimJobs(ctx, queue.ClaimParams{Worker: "w", Limit: 1, Now: later, LeaseUntil: later.Add(time.Hour)})
	if err != nil || len(again) != 1 || again[0].ID != "twice" {
		t.Fatalf("claim the retry: %v %v", again, err)
	}
	if _, err := s.FinishJobs(ctx, []queue.Finish{queue.RetryPolicy{}.Decide(again[0], "w", ok, later)}); err != nil {
		t.Fatal(err)
	}
	conn := connect(t, u)
	want := map[string][2]any{"once": {0, "succeeded"}, "twice": {1, "succeeded"}, "dead": {0, "failed"}}
	for id, w := range want {
		var rows int
		var outcome *string
		err := conn.QueryRow(ctx, `SELECT (SELECT count(*) FROM attempts WHERE job_id = $1), last_outcome::text FROM jobs WHERE id = $1`, id).
			Scan(&rows, &outcome)
		if err != nil || rows != w[0] || outcome == nil || *outcome != w[1] {
			t.Errorf("%s: %d attempts rows, final attempt on the row %v (%v), want %d and %s", id, rows, outcome, err, w[0], w[1])
		}
	}
	out, err := s.Output(ctx, "once", 1)
	if err != nil || string(out.Output) != "hi\n" {
		t.Fatalf("output kept on the row: %+v %v", out, err)
	}
}

// The outcomes the finish writes on a job's row are the values of the
// column's type: one missing from the type would fail every finish with
// it, one missing from the list would only go to attempts.
func TestRowOutcomesMatchTheType(t *testing.T) {
	conn := migratedConn(t)
	var values []string
	if err := conn.QueryRow(tctx(t), `SELECT enum_range(NULL::attempt_outcome)::text[]`).Scan(&values); err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, o := range postgres.RowOutcomes {
		want = append(want, string(o))
	}
	if !slices.Equal(values, want) {
		t.Fatalf("attempt_outcome is %v, finish writes %v", values, want)
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
