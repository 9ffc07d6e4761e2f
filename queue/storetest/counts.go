package storetest

import (
	"fmt"
	"sort"
	"testing"
	"time"

	"github.com/queuectl/queuectl/queue"
)

// testCountsFollowChanges walks jobs through every kind of state change a
// store makes (enqueue, claims of one queue and of limited queues,
// outcomes, cancels, retries, dependencies released and cancelled,
// discards, deletes) and checks after each step that CountJobs, which a
// store may keep as running totals, agrees with the jobs themselves.
func testCountsFollowChanges(t *testing.T, open Opener) {
	s := open(t)
	seen := map[queue.State]bool{}
	check := func(step string) {
		t.Helper()
		jobs, err := s.ListJobs(ctx(t), queue.ListParams{Limit: 1000})
		if err != nil {
			t.Fatalf("%s: list: %v", step, err)
		}
		want := map[string]int{}
		for _, j := range jobs {
			want[j.Queue+"/"+string(j.State)]++
			seen[j.State] = true
		}
		counts, err := s.CountJobs(ctx(t))
		if err != nil {
			t.Fatalf("%s: count: %v", step, err)
		}
		got := map[string]int{}
		for _, c := range counts {
			if c.N != 0 {
				got[c.Queue+"/"+string(c.State)] += c.N
			}
		}
		if g, w := countKeys(got), countKeys(want); !equal(g, w) {
			t.Fatalf("after %s: counts %v, jobs %v", step, g, w)
		}
	}
	noRetries := func(q string) func(n *queue.NewJob) {
		return func(n *queue.NewJob) { n.Queue, n.MaxRetries = q, ptr(0) }
	}
	insert(t, s,
		job(t, "p1", noRetries("a")), job(t, "p2", inQueue("a")), job(t, "k2", inQueue("a")),
		job(t, "c1", func(n *queue.NewJob) { n.Queue, n.After = "b", []string{"p1"} }),
		job(t, "c2", func(n *queue.NewJob) { n.Queue, n.After = "b", []string{"p2"} }),
		job(t, "k1", inQueue("b")), job(t, "r1", noRetries("b")))
	check("insert")

	byID := map[string]*queue.Job{}
	for _, j := range claim(t, s, "w", 3, t0, "a") {
		byID[j.ID] = j
	}
	if len(byID) != 3 {
		t.Fatalf("claim of queue a: %d jobs", len(byID))
	}
	check("claim from one queue")

	for _, id := range []string{"k1", "k2"} { // pending, then processing
		if _, err := s.CancelJob(ctx(t), id, t0); err != nil {
			t.Fatalf("cancel %s: %v", id, err)
		}
	}
	check("cancel")

	finish(t, s, byID["p1"], "w", failed(t0), t0)        // dead: c1 is cancelled
	finish(t, s, byID["p2"], "w", succeeded(t0, ""), t0) // c2 becomes pending
	finish(t, s, byID["k2"], "w", succeeded(t0, ""), t0) // cancelled, as asked
	check("finish")

	if _, err := s.RetryJobs(ctx(t), queue.RetryParams{IDs: []string{"p1"}, Now: t0}); err != nil {
		t.Fatalf("retry: %v", err)
	}
	check("retry")

	update(t, s, queue.ControlUpdate{Names: []string{"b"}, MaxRunning: ptr(5)})
	later := t0.Add(time.Hour)
	limited := claim(t, s, "w", 10, later)
	if len(limited) != 3 { // p1, c2, r1
		t.Fatalf("limited claim: %v", ids(limited))
	}
	check("claim with a limited queue")
	for _, j := range limited {
		finish(t, s, j, "w", failed(later), later)
	}
	check("failures")

	if _, err := s.DiscardJobs(ctx(t), queue.DiscardParams{AllDead: true}); err != nil {
		t.Fatalf("discard: %v", err)
	}
	check("discard")
	if _, err := s.DeleteJobs(ctx(t), queue.DeleteParams{Before: later.Add(time.Hour)}); err != nil {
		t.Fatalf("delete: %v", err)
	}
	check("delete")

	var states []string
	for st := range seen {
		states = append(states, string(st))
	}
	sort.Strings(states)
	if want := []string{"cancelled", "completed", "dead", "failed", "pending", "processing", "waiting"}; !equal(states, want) {
		t.Fatalf("states the walk saw: %v, want %v", states, want)
	}
}

func countKeys(m map[string]int) []string {
	var k []string
	for x, n := range m {
		k = append(k, fmt.Sprintf("%s=%d", x, n))
	}
	sort.Strings(k)
	return k
}
