package storetest

import (
	"testing"
	"time"

	"github.com/queuectl/queuectl/queue"
)

func testFinishChecksClaim(t *testing.T, open Opener) {
	s := open(t)
	insert(t, s, job(t, "a", nil))
	j := claim(t, s, "w1", 1, t0)[0]
	stale := queue.RetryPolicy{}.Decide(j, "w2", succeeded(t0, ""), t0)
	applied, err := s.FinishJobs(ctx(t), []queue.Finish{stale})
	if err != nil || applied[0] {
		t.Fatalf("finish by another worker must be skipped: applied=%v err=%v", applied, err)
	}
	wrongAttempt := queue.RetryPolicy{}.Decide(j, "w1", succeeded(t0, ""), t0)
	wrongAttempt.Attempt = 7
	if applied, _ := s.FinishJobs(ctx(t), []queue.Finish{wrongAttempt}); applied[0] {
		t.Fatal("finish of another attempt must be skipped")
	}
	finish(t, s, j, "w1", succeeded(t0, "hi"), t0.Add(2*time.Second))
	got := get(t, s, "a")
	if got.State != queue.StateCompleted || got.ExitCode == nil || *got.ExitCode != 0 || got.FinishedAt.IsZero() || got.Error != "" {
		t.Fatalf("completed job: %+v", got)
	}
	if applied, _ := s.FinishJobs(ctx(t), []queue.Finish{queue.RetryPolicy{}.Decide(j, "w1", succeeded(t0, ""), t0)}); applied[0] {
		t.Fatal("a second finish of the same attempt must be skipped")
	}
}
