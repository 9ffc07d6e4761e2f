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

// testFinishAndClaimLimited checks claims from limited queues in a
// FinishClaimer's transaction: an outcome frees its queue's running slot
// for the claim after it, a rate limit counts the starts, and claims keep
// the order they were given in, limited or not, each seeing what the ones
// before it took.
func testFinishAndClaimLimited(t *testing.T, open Opener) {
	s := open(t)
	both, ok := s.(queue.FinishClaimer)
	if !ok {
		t.Skip("this store records outcomes and claims in separate transactions")
	}
	update(t, s, queue.ControlUpdate{Names: []string{"lim"}, MaxRunning: ptr(1)})
	update(t, s, queue.ControlUpdate{Names: []string{"rate"}, Rate: &queue.RateLimit{N: 1, Per: time.Hour}})
	insert(t, s, job(t, "x", inQueue("lim")), job(t, "y", inQueue("lim")), job(t, "z", inQueue("lim")),
		job(t, "r1", inQueue("rate")), job(t, "r2", inQueue("rate")), job(t, "f1", inQueue("free")), job(t, "f2", inQueue("free")))
	x := claim(t, s, "w1", 5, t0, "lim")
	if len(x) != 1 || x[0].ID != "x" {
		t.Fatalf("claimed %v from lim, want [x]: one may run", ids(x))
	}
	at := t0.Add(time.Minute)
	claimAt := func(worker string, limit int, queues ...string) queue.ClaimParams {
		return queue.ClaimParams{Worker: worker, Queues: queues, Limit: limit, Now: at, LeaseUntil: at.Add(30 * time.Second)}
	}
	applied, claimed, err := both.FinishAndClaim(ctx(t),
		[]queue.Finish{queue.RetryPolicy{}.Decide(x[0], "w1", succeeded(at, ""), at)},
		[]queue.ClaimParams{claimAt("w1", 5, "lim"), claimAt("w2", 5, "free"), claimAt("w3", 5, "rate", "free"), claimAt("w4", 5, "lim", "rate")})
	if err != nil {
		t.Fatalf("finish and claim: %v", err)
	}
	if !slices.Equal(applied, []bool{true}) {
		t.Fatalf("applied %v, want [true]", applied)
	}
	want := [][]string{{"y"}, {"f1", "f2"}, {"r1"}, {}}
	if len(claimed) != len(want) {
		t.Fatalf("claimed %v, want %v", claimed, want)
	}
	for i := range want {
		if !equal(ids(claimed[i]), want[i]) {
			t.Fatalf("claim %d took %v, want %v: x's outcome frees lim's one slot, which y then holds; the free jobs go to the claim before; rate starts one an hour",
				i, ids(claimed[i]), want[i])
		}
	}
	// The start the joint claim took counts against the rate.
	if got := claim(t, s, "w4", 5, at.Add(time.Second), "rate"); len(got) != 0 {
		t.Fatalf("claimed %v from rate after its one start an hour", ids(got))
	}
	if got := get(t, s, "z"); got.State != queue.StatePending {
		t.Fatalf("z is %s, want pending: lim runs one at a time", got.State)
	}

	// A claim of every queue, while some queue is limited, still takes a
	// job the outcome before it released, from a queue that held no
	// runnable job when the transaction began.
	insert(t, s, job(t, "a", inQueue("deps")), job(t, "c", inQueue("other")))
	insert(t, s, job(t, "d", func(n *queue.NewJob) { n.Queue = "deps"; n.After = []string{"a"} }))
	a := claim(t, s, "w5", 1, at, "deps")
	if len(a) != 1 || a[0].ID != "a" {
		t.Fatalf("claimed %v from deps, want [a]", ids(a))
	}
	later := at.Add(time.Minute)
	_, claimed, err = both.FinishAndClaim(ctx(t),
		[]queue.Finish{queue.RetryPolicy{}.Decide(a[0], "w5", succeeded(later, ""), later)},
		[]queue.ClaimParams{{Worker: "w5", Limit: 5, Now: later, LeaseUntil: later.Add(30 * time.Second)}})
	if err != nil {
		t.Fatalf("finish a and claim every queue: %v", err)
	}
	if got := sorted(ids(claimed[0])); !equal(got, []string{"c", "d"}) {
		t.Fatalf("claim of every queue took %v, want [c d]: d was released by a's outcome in the same transaction", got)
	}
}
