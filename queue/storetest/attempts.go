package storetest

import (
	"testing"

	"github.com/queuectl/queuectl/queue"
)

// testInterruptedAttemptKeepsItsNumber: an interrupted attempt is not
// charged, but its number stays taken, and a reset for retry clears both.
func testInterruptedAttemptKeepsItsNumber(t *testing.T, open Opener) {
	s := open(t)
	insert(t, s, job(t, "i", func(n *queue.NewJob) { n.MaxRetries = ptr(0) }))
	j := claim(t, s, "w", 1, t0)[0]
	finish(t, s, j, "w", queue.End{Outcome: queue.OutcomeInterrupted, Started: t0, Finished: t0}, t0)
	if got := get(t, s, "i"); got.State != queue.StatePending || got.Attempts != 1 || got.Uncharged != 1 {
		t.Fatalf("interrupted: state %s attempts %d uncharged %d, want pending 1 1", got.State, got.Attempts, got.Uncharged)
	}
	j = claim(t, s, "w", 1, t0)[0]
	if j.Attempts != 2 || j.Uncharged != 1 {
		t.Fatalf("claimed again as attempt %d (uncharged %d), want attempt 2", j.Attempts, j.Uncharged)
	}
	finish(t, s, j, "w", failed(t0), t0)
	got := get(t, s, "i")
	hist, err := s.Attempts(ctx(t), "i")
	if err != nil || len(hist) != 2 || hist[0].Number != 1 || hist[1].Number != 2 {
		t.Fatalf("history %+v (err %v), want attempts numbered 1 and 2", hist, err)
	}
	// No retries: the first charged attempt's failure is final.
	if got.State != queue.StateDead || got.Attempts != 2 || got.Uncharged != 1 {
		t.Fatalf("failed: state %s attempts %d uncharged %d, want dead 2 1", got.State, got.Attempts, got.Uncharged)
	}
	if _, err := s.RetryJobs(ctx(t), queue.RetryParams{IDs: []string{"i"}, Now: t0}); err != nil {
		t.Fatal(err)
	}
	if got := get(t, s, "i"); got.Attempts != 0 || got.Uncharged != 0 {
		t.Fatalf("retried dead job: attempts %d uncharged %d, want both reset", got.Attempts, got.Uncharged)
	}
}
