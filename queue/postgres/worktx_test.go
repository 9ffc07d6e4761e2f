package postgres_test

import (
	"testing"
	"time"

	"github.com/queuectl/queuectl/queue"
)

// Worker transactions commit without waiting for the WAL flush, but only
// they: the setting must not stay on the pooled connection, where the next
// enqueue would inherit it.
func TestWorkerCommitModeStaysInItsTransaction(t *testing.T) {
	_, u := newSchema(t)
	s := open(t, withParams(t, u, "pool_max_conns", "1"))
	ctx := tctx(t)
	now := time.Now().UTC()
	mk := func(id string, after ...string) *queue.Job {
		j, err := queue.NewJob{ID: id, Command: "true", After: after}.Resolve(queue.DefaultSettings(), now)
		if err != nil {
			t.Fatal(err)
		}
		return j
	}
	if err := s.InsertJobs(ctx, []*queue.Job{mk("a")}); err != nil {
		t.Fatal(err)
	}
	if err := s.InsertJobs(ctx, []*queue.Job{mk("b", "a")}); err != nil {
		t.Fatal(err)
	}
	if err := s.RegisterWorker(ctx, &queue.WorkerInfo{ID: "w", Host: "h", StartedAt: now}); err != nil {
		t.Fatal(err)
	}
	check := func(after string) {
		t.Helper()
		got, err := s.Setting(ctx, "synchronous_commit")
		if err != nil || got != "on" {
			t.Fatalf("after %s: synchronous_commit = %q (%v), want on", after, got, err)
		}
	}
	check("open")
	claimed, err := s.ClaimJobs(ctx, queue.ClaimParams{Worker: "w", Limit: 2, Now: now.Add(time.Second), LeaseUntil: now.Add(time.Hour)})
	if err != nil || len(claimed) != 1 {
		t.Fatalf("claim: %d jobs, %v", len(claimed), err)
	}
	check("a claim")
	if _, err := s.Heartbeat(ctx, queue.HeartbeatParams{Worker: "w", Jobs: []string{"a"}, Now: now, LeaseUntil: now.Add(time.Hour)}); err != nil {
		t.Fatal(err)
	}
	check("a heartbeat")
	code := 0
	end := queue.End{Outcome: queue.OutcomeSucceeded, ExitCode: &code, Started: now, Finished: now}
	applied, err := s.FinishJobs(ctx, []queue.Finish{queue.RetryPolicy{}.Decide(claimed[0], "w", end, now)})
	if err != nil || !applied[0] {
		t.Fatalf("finish: %v %v", applied, err)
	}
	check("a finish that released a dependent")
	if b, err := s.GetJob(ctx, "b"); err != nil || b.State != queue.StatePending {
		t.Fatalf("dependent after its dependency completed: %+v %v", b, err)
	}
}
