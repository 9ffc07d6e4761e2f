package storetest

import (
	"slices"
	"testing"
	"time"

	"github.com/queuectl/queuectl/queue"
)

// testFinishAndClaim checks a queue.FinishClaimer: the outcomes are
// recorded first (each checked against its claim), so that jobs they
// release are claimable by the claims that follow in the same
// transaction, and each claim takes only what the ones before it left.
func testFinishAndClaim(t *testing.T, open Opener) {
	s := open(t)
	both, ok := s.(queue.FinishClaimer)
	if !ok {
		t.Skip("this store records outcomes and claims in separate transactions")
	}
	insert(t, s,
		job(t, "a", func(n *queue.NewJob) { n.Priority = 9 }),
		job(t, "b", func(n *queue.NewJob) { n.Queue = "q1" }),
		job(t, "c", func(n *queue.NewJob) { n.Queue = "q2" }))
	insert(t, s, job(t, "d", func(n *queue.NewJob) { n.After = []string{"a"} }))
	a := claim(t, s, "w1", 1, t0)
	if len(a) != 1 || a[0].ID != "a" {
		t.Fatalf("claimed %v, want a", ids(a))
	}
	at := t0.Add(time.Minute)
	stale := queue.RetryPolicy{}.Decide(a[0], "w2", succeeded(at, ""), at)
	done := queue.RetryPolicy{}.Decide(a[0], "w1", succeeded(at, "out"), at)
	claimAt := func(worker string, limit int, queues ...string) queue.ClaimParams {
		return queue.ClaimParams{Worker: worker, Queues: queues, Limit: limit, Now: at, LeaseUntil: at.Add(30 * time.Second)}
	}
	applied, claimed, err := both.FinishAndClaim(ctx(t), []queue.Finish{stale, done},
		[]queue.ClaimParams{claimAt("w1", 5, "q1"), claimAt("w2", 5)})
	if err != nil {
		t.Fatalf("finish and claim: %v", err)
	}
	if !slices.Equal(applied, []bool{false, true}) {
		t.Fatalf("applied %v, want [false true]: only the claim's holder finishes", applied)
	}
	if len(claimed) != 2 || !equal(ids(claimed[0]), []string{"b"}) || !equal(sorted(ids(claimed[1])), []string{"c", "d"}) {
		t.Fatalf("claimed %v, want [[b] [c d]]: d was released by a's outcome in the same transaction", claimed)
	}
	if got := get(t, s, "a"); got.State != queue.StateCompleted {
		t.Fatalf("a is %s, want completed", got.State)
	}
	for id, worker := range map[string]string{"b": "w1", "c": "w2", "d": "w2"} {
		if got := get(t, s, id); got.State != queue.StateProcessing || got.Worker != worker || got.Attempts != 1 {
			t.Fatalf("%s: %s by %q, attempt %d; want processing by %s, attempt 1", id, got.State, got.Worker, got.Attempts, worker)
		}
	}
	counts, err := s.CountJobs(ctx(t))
	if err != nil {
		t.Fatalf("count: %v", err)
	}
	n := map[queue.State]int{}
	for _, c := range counts {
		n[c.State] += c.N
	}
	if n[queue.StateCompleted] != 1 || n[queue.StateProcessing] != 3 || n[queue.StatePending] != 0 || n[queue.StateWaiting] != 0 {
		t.Fatalf("counts %v, want 1 completed and 3 processing", n)
	}
	// Nothing left: the call still records its outcomes.
	b := claimed[0][0]
	applied, claimed, err = both.FinishAndClaim(ctx(t), []queue.Finish{queue.RetryPolicy{}.Decide(b, "w1", succeeded(at, ""), at)},
		[]queue.ClaimParams{claimAt("w1", 5)})
	if err != nil || !slices.Equal(applied, []bool{true}) || len(claimed) != 1 || len(claimed[0]) != 0 {
		t.Fatalf("finish b, claim from an empty queue: applied %v, claimed %v, err %v", applied, claimed, err)
	}
	if got := get(t, s, "b"); got.State != queue.StateCompleted {
		t.Fatalf("b is %s, want completed", got.State)
	}
}
