package storetest

import (
	"errors"
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/queuectl/queuectl/queue"
)

// deadJob inserts a job with no retries in queue q and lets it fail once.
func deadJob(t *testing.T, s queue.Store, id, q string) {
	t.Helper()
	insert(t, s, job(t, id, func(n *queue.NewJob) { n.MaxRetries = ptr(0); n.Queue = q }))
	got := claim(t, s, "w", 1, t0, q)
	if len(got) != 1 || got[0].ID != id {
		t.Fatalf("claim %s: %v", id, ids(got))
	}
	finish(t, s, got[0], "w", failed(t0), t0)
}

func testDiscard(t *testing.T, open Opener) {
	s := open(t)
	deadJob(t, s, "d1", "a")
	deadJob(t, s, "d2", "b")
	deadJob(t, s, "d3", "a")
	insert(t, s, job(t, "run", nil), job(t, "wait", nil))
	claim(t, s, "w", 1, t0) // "run" is processing now
	if _, err := s.DiscardJobs(ctx(t), queue.DiscardParams{IDs: []string{"wait", "run"}}); !errors.Is(err, queue.ErrConflict) {
		t.Fatalf("discard a running job: %v, want ErrConflict", err)
	}
	if _, err := s.DiscardJobs(ctx(t), queue.DiscardParams{IDs: []string{"wait", "nope"}}); !errors.Is(err, queue.ErrNotFound) {
		t.Fatalf("discard an unknown job: %v, want ErrNotFound", err)
	}
	get(t, s, "wait") // all or none: still there
	gone, err := s.DiscardJobs(ctx(t), queue.DiscardParams{IDs: []string{"wait"}})
	if err != nil || !equal(gone, []string{"wait"}) {
		t.Fatalf("discard one: %v %v", gone, err)
	}
	if _, err := s.GetJob(ctx(t), "wait"); !errors.Is(err, queue.ErrNotFound) {
		t.Fatalf("discarded job still there: %v", err)
	}
	if _, err := s.Attempts(ctx(t), "d1"); err != nil {
		t.Fatal(err)
	}
	gone, err = s.DiscardJobs(ctx(t), queue.DiscardParams{AllDead: true, Queue: "a"})
	if err != nil || !equal(gone, []string{"d1", "d3"}) {
		t.Fatalf("discard dead of queue a: %v %v", gone, err)
	}
	if h, _ := s.Attempts(ctx(t), "d1"); len(h) != 0 {
		t.Fatalf("history of a discarded job: %v", h)
	}
	gone, err = s.DiscardJobs(ctx(t), queue.DiscardParams{AllDead: true})
	if err != nil || !equal(gone, []string{"d2"}) {
		t.Fatalf("discard all dead: %v %v", gone, err)
	}
	if gone, err = s.DiscardJobs(ctx(t), queue.DiscardParams{AllDead: true}); err != nil || len(gone) != 0 {
		t.Fatalf("discard from an empty DLQ: %v %v", gone, err)
	}
}

func testRetryDeadByQueue(t *testing.T, open Opener) {
	s := open(t)
	deadJob(t, s, "a1", "a")
	deadJob(t, s, "b1", "b")
	moved, err := s.RetryJobs(ctx(t), queue.RetryParams{AllDead: true, Queue: "b", Now: t0})
	if err != nil || !equal(moved, []string{"b1"}) {
		t.Fatalf("retry dead of queue b: %v %v", moved, err)
	}
	if j := get(t, s, "a1"); j.State != queue.StateDead {
		t.Fatalf("a1 is %s, want dead", j.State)
	}
}

func testListSearchAndCursor(t *testing.T, open Opener) {
	s := open(t)
	for i := range 7 {
		insert(t, s, job(t, fmt.Sprintf("j%d", i), func(n *queue.NewJob) {
			n.Command = fmt.Sprintf("echo %d", i)
			if i == 3 {
				n.Command = "backup --full"
			}
		}))
	}
	found, err := s.ListJobs(ctx(t), queue.ListParams{Search: "backup"})
	if err != nil || !equal(ids(found), []string{"j3"}) {
		t.Fatalf("search in command: %v %v", ids(found), err)
	}
	if found, _ = s.ListJobs(ctx(t), queue.ListParams{Search: "j5"}); !equal(ids(found), []string{"j5"}) {
		t.Fatalf("search in id: %v", ids(found))
	}
	page1, _ := s.ListJobs(ctx(t), queue.ListParams{Limit: 3})
	// Jobs added between pages go to the top and shift nothing.
	insert(t, s, job(t, "late", nil))
	page2, err := s.ListJobs(ctx(t), queue.ListParams{Limit: 3, After: page1[len(page1)-1].ID})
	if err != nil {
		t.Fatal(err)
	}
	page3, _ := s.ListJobs(ctx(t), queue.ListParams{Limit: 3, After: page2[len(page2)-1].ID})
	got := append(append(ids(page1), ids(page2)...), ids(page3)...)
	if !equal(got, []string{"j6", "j5", "j4", "j3", "j2", "j1", "j0"}) {
		t.Fatalf("pages: %v", got)
	}
	if _, err := s.ListJobs(ctx(t), queue.ListParams{After: "nope"}); !errors.Is(err, queue.ErrNotFound) {
		t.Fatalf("unknown cursor: %v, want ErrNotFound", err)
	}
}

func testMetrics(t *testing.T, open Opener) {
	s := open(t)
	insert(t, s, job(t, "ok", func(n *queue.NewJob) { n.Queue = "q" }))
	insert(t, s, job(t, "later", func(n *queue.NewJob) { n.Queue = "q"; n.RunAt = t0.Add(time.Hour) }))
	insert(t, s, job(t, "waits", func(n *queue.NewJob) { n.Queue = "r" }))
	start := t0.Add(2 * time.Second)
	got := claim(t, s, "w", 1, start, "q")
	finish(t, s, got[0], "w", succeeded(start, "hi"), start)
	m, err := s.Metrics(ctx(t), t0.Add(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	if len(m.RunTimes) != 1 {
		t.Fatalf("run time totals: %+v", m.RunTimes)
	}
	rt := m.RunTimes[0]
	if rt.Queue != "q" || rt.Outcome != queue.OutcomeSucceeded || rt.N != 1 || rt.Sum != 1500*time.Millisecond || rt.LE != 2500*time.Millisecond {
		t.Fatalf("run time total: %+v", rt)
	}
	if len(m.StartDelays) != 1 || m.StartDelays[0].Queue != "q" || m.StartDelays[0].Sum != 2*time.Second ||
		m.StartDelays[0].LE != 2500*time.Millisecond {
		t.Fatalf("start delay totals: %+v", m.StartDelays)
	}
	// "later" is not due yet; "waits" has been due for a minute.
	if len(m.OldestPending) != 1 || !m.OldestPending["r"].Equal(t0) {
		t.Fatalf("oldest pending: %v", m.OldestPending)
	}
	// A long run lands in the unbounded bucket; totals only grow.
	insert(t, s, job(t, "slow", func(n *queue.NewJob) { n.Queue = "q" }))
	got = claim(t, s, "w", 1, start, "q")
	finish(t, s, got[0], "w", queue.End{Outcome: queue.OutcomeTimedOut, Started: start, Finished: start.Add(3 * time.Hour)}, start.Add(3*time.Hour))
	if m, err = s.Metrics(ctx(t), t0); err != nil {
		t.Fatal(err)
	}
	if len(m.RunTimes) != 2 || m.RunTimes[1].Outcome != queue.OutcomeTimedOut || m.RunTimes[1].LE != time.Duration(math.MaxInt64) {
		t.Fatalf("run time totals: %+v", m.RunTimes)
	}
}

// testListStatesOfBothClasses lists states of both classes at once (failed
// and dead, as retry's completion does; completed and pending): newest
// first, limited, and paged with a cursor, as one state would be.
func testListStatesOfBothClasses(t *testing.T, open Opener) {
	s := open(t)
	for i := range 6 {
		insert(t, s, job(t, fmt.Sprintf("j%d", i), nil))
	}
	got := claim(t, s, "w", 4, t0)
	if !equal(ids(got), []string{"j0", "j1", "j2", "j3"}) {
		t.Fatalf("claimed %v", ids(got))
	}
	finish(t, s, got[0], "w", succeeded(t0, ""), t0)
	finish(t, s, got[1], "w", failed(t0), t0)
	finish(t, s, got[2], "w", succeeded(t0, ""), t0)
	// j3 is processing, j4 and j5 pending.
	list := lister(t, s)
	both := []queue.State{queue.StateCompleted, queue.StatePending}
	if got := list(queue.ListParams{States: both}); !equal(got, []string{"j5", "j4", "j2", "j0"}) {
		t.Fatalf("completed and pending: %v", got)
	}
	page1 := list(queue.ListParams{States: both, Limit: 3})
	page2 := list(queue.ListParams{States: both, Limit: 3, After: "j2"})
	if !equal(page1, []string{"j5", "j4", "j2"}) || !equal(page2, []string{"j0"}) {
		t.Fatalf("completed and pending in pages of 3: %v, %v", page1, page2)
	}
	if got := list(queue.ListParams{States: []queue.State{queue.StateFailed, queue.StateCompleted}, Limit: 2}); !equal(got, []string{"j2", "j1"}) {
		t.Fatalf("failed and completed, limit 2: %v", got)
	}
	if got := list(queue.ListParams{States: []queue.State{queue.StateProcessing, queue.StateCancelled}, Queue: "default"}); !equal(got, []string{"j3"}) {
		t.Fatalf("processing and cancelled in default: %v", got)
	}
}

// testListDueAfter lists the scheduled jobs, as list --state scheduled
// does: pending jobs whose run_at is after a time, paged like any list.
func testListDueAfter(t *testing.T, open Opener) {
	s := open(t)
	for i, at := range []time.Duration{0, time.Hour, time.Minute, 2 * time.Hour} {
		insert(t, s, job(t, fmt.Sprintf("j%d", i), func(n *queue.NewJob) { n.RunAt = t0.Add(at) }))
	}
	pending := []queue.State{queue.StatePending}
	list := lister(t, s)
	if got := list(queue.ListParams{States: pending, DueAfter: t0}); !equal(got, []string{"j3", "j2", "j1"}) {
		t.Fatalf("due after t0: %v", got)
	}
	if got := list(queue.ListParams{States: pending, DueAfter: t0.Add(time.Minute)}); !equal(got, []string{"j3", "j1"}) {
		t.Fatalf("due after a minute (run_at equal to it is due): %v", got)
	}
	if got := list(queue.ListParams{States: pending, DueAfter: t0, Limit: 2, After: "j2"}); !equal(got, []string{"j1"}) {
		t.Fatalf("due after t0, after j2: %v", got)
	}
	if got := list(queue.ListParams{States: pending}); len(got) != 4 {
		t.Fatalf("pending without DueAfter: %v", got)
	}
}

// lister lists s's jobs by id, failing t on an error.
func lister(t *testing.T, s queue.Store) func(queue.ListParams) []string {
	return func(p queue.ListParams) []string {
		t.Helper()
		jobs, err := s.ListJobs(ctx(t), p)
		if err != nil {
			t.Fatalf("list %+v: %v", p, err)
		}
		return ids(jobs)
	}
}

// testLookupsOfUnstorableText looks jobs up by texts no job can hold (a NUL,
// bytes that are not UTF-8), as a request's path or query may carry them:
// each finds nothing, as a lookup of an unknown job does, and none fails.
func testLookupsOfUnstorableText(t *testing.T, open Opener) {
	s := open(t)
	deadJob(t, s, "dead", "q")
	for _, text := range []string{"a\x00b", "\xc3("} {
		t.Run(fmt.Sprintf("%q", text), func(t *testing.T) {
			notFound := func(what string, err error) {
				t.Helper()
				if !errors.Is(err, queue.ErrNotFound) {
					t.Errorf("%s: %v, want ErrNotFound", what, err)
				}
			}
			_, err := s.GetJob(ctx(t), text)
			notFound("get", err)
			_, err = s.Output(ctx(t), text, 0)
			notFound("output", err)
			_, err = s.OutputAt(ctx(t), text, 0)
			notFound("output at", err)
			_, err = s.ListJobs(ctx(t), queue.ListParams{After: text})
			notFound("list after", err)
			_, err = s.RetryJobs(ctx(t), queue.RetryParams{IDs: []string{text}, Now: t0})
			notFound("retry", err)
			_, err = s.DiscardJobs(ctx(t), queue.DiscardParams{IDs: []string{"dead", text}})
			notFound("discard", err)
			_, err = s.CancelJob(ctx(t), text, t0)
			notFound("cancel", err)
			if hist, err := s.Attempts(ctx(t), text); err != nil || len(hist) != 0 {
				t.Errorf("attempts: %v %v, want none", hist, err)
			}
			for name, p := range map[string]queue.ListParams{
				"queue": {Queue: text}, "search": {Search: text},
				"label key": {Labels: map[string]string{text: "v"}}, "label value": {Labels: map[string]string{"k": text}},
			} {
				if found, err := s.ListJobs(ctx(t), p); err != nil || len(found) != 0 {
					t.Errorf("list by %s: %v %v, want none", name, ids(found), err)
				}
			}
			if moved, err := s.RetryJobs(ctx(t), queue.RetryParams{AllDead: true, Queue: text, Now: t0}); err != nil || len(moved) != 0 {
				t.Errorf("retry the dead of queue: %v %v, want none", moved, err)
			}
			if gone, err := s.DiscardJobs(ctx(t), queue.DiscardParams{AllDead: true, Queue: text}); err != nil || len(gone) != 0 {
				t.Errorf("discard the dead of queue: %v %v, want none", gone, err)
			}
		})
	}
	if j := get(t, s, "dead"); j.State != queue.StateDead {
		t.Fatalf("dead job after the lookups: %s, want dead", j.State)
	}
}
