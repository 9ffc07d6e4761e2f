package storetest

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/queuectl/queuectl/queue"
)

// controlTests are the queue-control and job-event cases of the suite.
func controlTests() []suiteCase {
	return []suiteCase{
		{"QueueControlsRoundTrip", testControlsRoundTrip},
		{"PauseHoldsClaims", testPauseHoldsClaims},
		{"MaxRunningAcrossHandles", testMaxRunningAcrossHandles},
		{"MaxRunningUnderConcurrentClaims", testMaxRunningConcurrent},
		{"RateLimitWindow", testRateLimitWindow},
		{"LimitedQueuesKeepClaimOrder", testLimitedClaimOrder},
		{"JobEventsAcrossHandles", testJobEvents},
		{"CountScheduled", testCountScheduled},
	}
}

// testCountScheduled: the scheduled jobs of a queue are its pending jobs
// whose run time is still ahead; due jobs and failed ones waiting for a
// retry are not among them, and a queue with none is left out.
func testCountScheduled(t *testing.T, open Opener) {
	s := open(t)
	at := func(q string, d time.Duration) func(n *queue.NewJob) {
		return func(n *queue.NewJob) { n.Queue, n.RunAt = q, t0.Add(d) }
	}
	insert(t, s, job(t, "a1", at("a", time.Hour)), job(t, "a2", at("a", 2*time.Hour)), job(t, "a3", at("a", 0)),
		job(t, "b1", at("b", 0)), job(t, "c1", at("c", time.Hour)), job(t, "d1", at("d", -time.Minute)),
		job(t, "e1", func(n *queue.NewJob) { n.Queue, n.MaxRetries = "e", ptr(3) }))
	e := claim(t, s, "w", 1, t0, "e")
	finish(t, s, e[0], "w", failed(t0), t0)
	if got := get(t, s, "e1"); got.State != queue.StateFailed || !got.RunAt.After(t0) {
		t.Fatalf("e1 should wait for its retry: %s at %v", got.State, got.RunAt)
	}
	check := func(now time.Time, want map[string]int) {
		t.Helper()
		got, err := s.CountScheduled(ctx(t), now)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != len(want) {
			t.Fatalf("at %v: scheduled %v, want %v", now.Sub(t0), got, want)
		}
		for q, n := range want {
			if got[q] != n {
				t.Fatalf("at %v: scheduled %v, want %v", now.Sub(t0), got, want)
			}
		}
	}
	check(t0, map[string]int{"a": 2, "c": 1})
	check(t0.Add(90*time.Minute), map[string]int{"a": 1})
	check(t0.Add(3*time.Hour), map[string]int{})
}

func update(t *testing.T, s queue.Store, u queue.ControlUpdate) {
	t.Helper()
	if err := s.UpdateQueueControls(ctx(t), u); err != nil {
		t.Fatalf("update controls %v: %v", u.Names, err)
	}
}

func inQueue(q string) func(n *queue.NewJob) { return func(n *queue.NewJob) { n.Queue = q } }

func testControlsRoundTrip(t *testing.T, open Opener) {
	s := open(t)
	update(t, s, queue.ControlUpdate{Names: []string{"b", "a"}, Paused: ptr(true)})
	update(t, s, queue.ControlUpdate{Names: []string{"a"}, MaxRunning: ptr(3), Rate: &queue.RateLimit{N: 10, Per: time.Second}})
	update(t, s, queue.ControlUpdate{Names: []string{"a"}, Paused: ptr(false)})
	cs, err := s.QueueControls(ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	want := []queue.QueueControl{
		{Name: "a", MaxRunning: 3, Rate: queue.RateLimit{N: 10, Per: time.Second}},
		{Name: "b", Paused: true},
	}
	if fmt.Sprint(cs) != fmt.Sprint(want) {
		t.Fatalf("controls = %+v, want %+v", cs, want)
	}
	if err := s.UpdateQueueControls(ctx(t), queue.ControlUpdate{Names: []string{"a"}, MaxRunning: ptr(-1)}); err == nil {
		t.Fatal("a negative max running was accepted")
	}

	// A control that neither pauses nor limits is no control: resuming a
	// queue never paused, or lifting a queue's last limit, leaves no row.
	update(t, s, queue.ControlUpdate{Names: []string{"never-paused"}, Paused: ptr(false)})
	update(t, s, queue.ControlUpdate{Names: []string{"a"}, MaxRunning: ptr(0), Rate: &queue.RateLimit{}})
	update(t, s, queue.ControlUpdate{Names: []string{"b"}, Paused: ptr(false)})
	if cs, err := s.QueueControls(ctx(t)); err != nil || len(cs) != 0 {
		t.Fatalf("controls after lifting every pause and limit: %+v %v", cs, err)
	}
}

func testPauseHoldsClaims(t *testing.T, open Opener) {
	s, other := open(t), open(t)
	insert(t, s, job(t, "a1", inQueue("a")), job(t, "b1", inQueue("b")), job(t, "a2", inQueue("a")))
	update(t, s, queue.ControlUpdate{Names: []string{"a"}, Paused: ptr(true)})
	// Another handle (another process) obeys the pause at its next claim.
	if got := ids(claim(t, other, "w", 10, t0)); !equal(got, []string{"b1"}) {
		t.Fatalf("claim of every queue with a paused = %v, want [b1]", got)
	}
	if got := claim(t, other, "w", 10, t0, "a"); len(got) != 0 {
		t.Fatalf("claim of paused queue a = %v", ids(got))
	}
	next, err := other.NextRunAt(ctx(t), []string{"a"})
	if err != nil || !next.IsZero() {
		t.Fatalf("next run of paused queue = %v, %v; want none", next, err)
	}
	update(t, s, queue.ControlUpdate{Names: []string{"a"}, Paused: ptr(false)})
	if got := ids(claim(t, other, "w", 10, t0, "a")); !equal(got, []string{"a1", "a2"}) {
		t.Fatalf("claim after resume = %v", got)
	}
}

func testMaxRunningAcrossHandles(t *testing.T, open Opener) {
	s, h1, h2 := open(t), open(t), open(t)
	for i := range 6 {
		insert(t, s, job(t, fmt.Sprintf("j%d", i), inQueue("q")))
	}
	insert(t, s, job(t, "free", inQueue("f")))
	update(t, s, queue.ControlUpdate{Names: []string{"q"}, MaxRunning: ptr(2)})
	first := claim(t, h1, "w1", 1, t0, "q")
	second := claim(t, h2, "w2", 10, t0)
	got := append(ids(first), ids(second)...)
	if len(first) != 1 || len(second) != 2 || !contains(got, "free") {
		t.Fatalf("claims = %v then %v; want one, then one more of q and the free queue's job", ids(first), ids(second))
	}
	if more := claim(t, h1, "w1", 10, t0, "q"); len(more) != 0 {
		t.Fatalf("claimed %v beyond max_running 2", ids(more))
	}
	finish(t, h1, first[0], "w1", succeeded(t0, ""), t0)
	if more := claim(t, h2, "w2", 10, t0, "q"); len(more) != 1 {
		t.Fatalf("after one finished, claimed %v; want one", ids(more))
	}
}

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

// testMaxRunningConcurrent claims from many handles at once; the running
// count of the limited queue must never pass its limit.
func testMaxRunningConcurrent(t *testing.T, open Opener) {
	const limit, handles = 3, 4
	s := open(t)
	var jobs []*queue.Job
	for i := range 40 {
		jobs = append(jobs, job(t, fmt.Sprintf("j%02d", i), inQueue("q")))
	}
	insert(t, s, jobs...)
	update(t, s, queue.ControlUpdate{Names: []string{"q"}, MaxRunning: ptr(limit)})
	var mu sync.Mutex
	running, done, maxSeen := 0, 0, 0
	var wg sync.WaitGroup
	errs := make(chan error, handles)
	for h := range handles {
		hs := open(t)
		wg.Add(1)
		go func() {
			defer wg.Done()
			worker := fmt.Sprintf("w%d", h)
			deadline := time.Now().Add(30 * time.Second)
			for time.Now().Before(deadline) {
				mu.Lock()
				finished := done == len(jobs)
				mu.Unlock()
				if finished {
					return
				}
				got, err := hs.ClaimJobs(context.Background(), queue.ClaimParams{Worker: worker, Limit: 2, Now: t0, LeaseUntil: t0.Add(time.Minute)})
				if err != nil {
					errs <- err
					return
				}
				mu.Lock()
				running += len(got)
				maxSeen = max(maxSeen, running)
				mu.Unlock()
				for _, j := range got {
					// Count it as ended before the store does, so the
					// count here is never below the store's.
					f := queue.RetryPolicy{}.Decide(j, worker, succeeded(t0, ""), t0)
					mu.Lock()
					running--
					mu.Unlock()
					if _, err := hs.FinishJobs(context.Background(), []queue.Finish{f}); err != nil {
						errs <- err
						return
					}
					mu.Lock()
					done++
					mu.Unlock()
				}
			}
			errs <- fmt.Errorf("%s: jobs left after 30s", worker)
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if maxSeen > limit {
		t.Fatalf("%d jobs of the queue held at once, max_running %d", maxSeen, limit)
	}
}

func testRateLimitWindow(t *testing.T, open Opener) {
	s := open(t)
	for i := range 10 {
		insert(t, s, job(t, fmt.Sprintf("j%d", i), inQueue("q")))
	}
	update(t, s, queue.ControlUpdate{Names: []string{"q"}, Rate: &queue.RateLimit{N: 3, Per: time.Second}})
	if _, ok := s.(queue.DatabaseClock); ok {
		rateLimitWindowOnDatabaseClock(t, s)
		return
	}
	steps := []struct {
		at   time.Duration
		want int
	}{
		{0, 3},
		{500 * time.Millisecond, 0},
		{999 * time.Millisecond, 0},
		{1001 * time.Millisecond, 3},
		{1500 * time.Millisecond, 0},
		{2500 * time.Millisecond, 3},
	}
	for _, st := range steps {
		if got := claim(t, s, "w", 10, t0.Add(st.at)); len(got) != st.want {
			t.Fatalf("claim at +%v took %d jobs, want %d (3/s)", st.at, len(got), st.want)
		}
	}
}

// rateLimitWindowOnDatabaseClock is RateLimitWindow on a store that counts
// a queue's starts on its own clock (queue.DatabaseClock): the times
// claimers pass do not move its window, only the database's clock does.
func rateLimitWindowOnDatabaseClock(t *testing.T, s queue.Store) {
	t.Helper()
	for round := range 2 {
		// Claimers an hour apart share the window.
		skew := time.Duration(round*2-1) * time.Hour
		if got := claim(t, s, "w", 10, storeNow(t, s).Add(skew)); len(got) != 3 {
			t.Fatalf("round %d: first claim took %d jobs, want 3 (3/s)", round, len(got))
		}
		started := storeNow(t, s) // the starts were stamped by now
		got := claim(t, s, "w", 10, storeNow(t, s).Add(-skew))
		if len(got) != 0 && storeNow(t, s).Before(started.Add(time.Second)) {
			t.Fatalf("round %d: a claim within the second took %d more jobs, want none (3/s)", round, len(got))
		}
		storeTimeAfter(t, s, started.Add(time.Second))
	}
	if got := claim(t, s, "w", 10, storeNow(t, s)); len(got) != 3 {
		t.Fatalf("claim after the window took %d jobs, want the last 3", len(got))
	}
}

func testLimitedClaimOrder(t *testing.T, open Opener) {
	s := open(t)
	insert(t, s,
		job(t, "free-low", func(n *queue.NewJob) { n.Queue = "f" }),
		job(t, "lim-high", func(n *queue.NewJob) { n.Queue = "l"; n.Priority = 5 }),
		job(t, "lim-high2", func(n *queue.NewJob) { n.Queue = "l"; n.Priority = 5 }),
		job(t, "free-mid", func(n *queue.NewJob) { n.Queue = "f"; n.Priority = 1 }),
	)
	update(t, s, queue.ControlUpdate{Names: []string{"l"}, MaxRunning: ptr(1)})
	got := ids(claim(t, s, "w", 2, t0))
	if !equal(got, []string{"lim-high", "free-mid"}) {
		t.Fatalf("claim = %v, want [lim-high free-mid]: priority order across queues, one of the limited one", got)
	}
}

// testJobEvents: a finish, a cancel and saved live output by one handle
// wake another handle's JobEvents (wait and output -f rely on it).
func testJobEvents(t *testing.T, open Opener) {
	s, watcher := open(t), open(t)
	insert(t, s, job(t, "a", nil), job(t, "b", nil))
	c, cancel := context.WithCancel(ctx(t))
	defer cancel()
	events, err := watcher.JobEvents(c)
	if err != nil {
		t.Fatal(err)
	}
	expect := func(what string) {
		t.Helper()
		select {
		case <-events:
		case <-time.After(10 * time.Second):
			t.Fatalf("no job event after %s by another handle", what)
		}
	}
	j := claim(t, s, "w", 1, t0)[0]
	err = s.SaveLiveOutput(ctx(t), queue.LiveOutput{JobID: j.ID, Worker: "w", Attempt: 1, Output: []byte("x"), Written: 1, UpdatedAt: t0})
	if err != nil {
		t.Fatal(err)
	}
	expect("saving live output")
	finish(t, s, j, "w", succeeded(t0, "x"), t0)
	expect("a finish")
	if _, err := s.CancelJob(ctx(t), "b", t0); err != nil {
		t.Fatal(err)
	}
	expect("a cancel")
	cancel()
	for range events { // closed when ctx ends
	}
}
