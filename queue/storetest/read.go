package storetest

import (
	"errors"
	"fmt"
	"math"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/queuectl/queuectl/queue"
)

func testHistoryAndOutput(t *testing.T, open Opener) {
	s := open(t)
	insert(t, s, job(t, "a", nil))
	j := claim(t, s, "w", 1, t0)[0]
	finish(t, s, j, "w", failed(t0), t0)
	j = claim(t, s, "w", 1, t0.Add(time.Hour))[0]
	finish(t, s, j, "w", succeeded(t0.Add(time.Hour), "hello\n"), t0.Add(time.Hour))
	hist, err := s.Attempts(ctx(t), "a")
	if err != nil || len(hist) != 2 {
		t.Fatalf("history: %v %v", hist, err)
	}
	if hist[0].Number != 1 || hist[0].Outcome != queue.OutcomeFailed || *hist[0].ExitCode != 1 ||
		hist[1].Number != 2 || hist[1].Outcome != queue.OutcomeSucceeded || hist[1].Duration() != 1500*time.Millisecond || hist[1].Worker != "w" {
		t.Fatalf("history rows: %+v %+v", hist[0], hist[1])
	}
	out, err := s.Output(ctx(t), "a", 0)
	if err != nil || string(out.Output) != "hello\n" || out.Number != 2 {
		t.Fatalf("latest output: %+v %v", out, err)
	}
	if out, err := s.Output(ctx(t), "a", 1); err != nil || len(out.Output) != 0 {
		t.Fatalf("attempt 1 output: %+v %v", out, err)
	}
	for _, n := range []int{9, math.MaxInt32 + 1, math.MaxInt} { // as ?attempt=N may ask
		if _, err := s.Output(ctx(t), "a", n); !errors.Is(err, queue.ErrNotFound) {
			t.Fatalf("missing attempt %d: %v", n, err)
		}
	}
	if _, err := s.OutputAt(ctx(t), "a", math.MaxInt); !errors.Is(err, queue.ErrNotFound) {
		t.Fatalf("missing place in the history: %v", err)
	}
	if _, err := s.Output(ctx(t), "nope", 0); !errors.Is(err, queue.ErrNotFound) {
		t.Fatalf("missing job: %v", err)
	}
	// A job that has not run yet may; one cancelled before it ran never
	// will, and the error says which.
	insert(t, s, job(t, "p", nil))
	if _, err := s.Output(ctx(t), "p", 0); !errors.Is(err, queue.ErrNotFound) || !strings.Contains(err.Error(), "no finished attempt yet") {
		t.Fatalf("a pending job's output: %v", err)
	}
	if _, err := s.CancelJob(ctx(t), "p", t0); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Output(ctx(t), "p", 0); !errors.Is(err, queue.ErrNotFound) || !strings.Contains(err.Error(), `"p" is cancelled and never ran`) {
		t.Fatalf("the output of a job cancelled before it ran: %v", err)
	}
}

func testListAndCount(t *testing.T, open Opener) {
	s := open(t)
	for i := range 5 {
		insert(t, s, job(t, fmt.Sprintf("j%d", i), func(n *queue.NewJob) {
			if i%2 == 0 {
				n.Queue = "even"
			}
		}))
	}
	claim(t, s, "w", 1, t0, "even")
	all, err := s.ListJobs(ctx(t), queue.ListParams{})
	if err != nil || len(all) != 5 {
		t.Fatalf("list all: %d %v", len(all), err)
	}
	lim, _ := s.ListJobs(ctx(t), queue.ListParams{Limit: 2})
	if !equal(ids(lim), []string{"j4", "j3"}) {
		t.Fatalf("newest first with limit: %v", ids(lim))
	}
	pend, _ := s.ListJobs(ctx(t), queue.ListParams{States: []queue.State{queue.StatePending}, Queue: "even"})
	if len(pend) != 2 {
		t.Fatalf("pending in even: %v", ids(pend))
	}
	counts, err := s.CountJobs(ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]int{}
	for _, c := range counts {
		got[c.Queue+"/"+string(c.State)] = c.N
	}
	want := map[string]int{"default/pending": 2, "even/pending": 2, "even/processing": 1}
	keys := func(m map[string]int) []string {
		var k []string
		for x := range m {
			k = append(k, fmt.Sprintf("%s=%d", x, m[x]))
		}
		sort.Strings(k)
		return k
	}
	if !equal(keys(got), keys(want)) {
		t.Fatalf("counts: got %v want %v", keys(got), keys(want))
	}
}

// testHistoryThroughRetry: a dead job sent back by a user keeps the
// history of its first life, final attempt and output included, and adds
// its next attempts after it; pruning and deleting reach every attempt.
func testHistoryThroughRetry(t *testing.T, open Opener) {
	s := open(t)
	insert(t, s, job(t, "r", func(n *queue.NewJob) { n.MaxRetries = ptr(0) }))
	j := claim(t, s, "w1", 1, t0)[0]
	code := 2
	finish(t, s, j, "w1", queue.End{Outcome: queue.OutcomeFailed, ExitCode: &code, Error: "exit status 2", Started: t0,
		Finished: t0.Add(time.Second), Output: []byte("first life\n")}, t0.Add(time.Second))
	if got := get(t, s, "r"); got.State != queue.StateDead {
		t.Fatalf("after its only attempt failed: %s, want dead", got.State)
	}
	later := t0.Add(time.Hour)
	if _, err := s.RetryJobs(ctx(t), queue.RetryParams{IDs: []string{"r"}, Now: later}); err != nil {
		t.Fatal(err)
	}
	j = claim(t, s, "w2", 1, later)[0]
	finish(t, s, j, "w2", succeeded(later, "second life\n"), later)
	hist, err := s.Attempts(ctx(t), "r")
	if err != nil || len(hist) != 2 {
		t.Fatalf("history after a retry of a dead job: %+v %v, want 2 attempts", hist, err)
	}
	first, second := hist[0], hist[1]
	if first.Outcome != queue.OutcomeFailed || first.ExitCode == nil || *first.ExitCode != 2 || first.Error != "exit status 2" ||
		first.Worker != "w1" || first.Duration() != time.Second || !first.FinishedAt.Equal(t0.Add(time.Second)) {
		t.Fatalf("first life's attempt: %+v", first)
	}
	if second.Outcome != queue.OutcomeSucceeded || second.Worker != "w2" || second.Number != 1 || !second.FinishedAt.Equal(later.Add(1500*time.Millisecond)) {
		t.Fatalf("second life's attempt: %+v", second)
	}
	if out, err := s.Output(ctx(t), "r", 0); err != nil || string(out.Output) != "second life\n" {
		t.Fatalf("latest output: %+v %v", out, err)
	}
	// Both attempts are numbered 1 (a retried dead job starts over): the
	// number asks for the latest of them.
	if out, err := s.Output(ctx(t), "r", 1); err != nil || string(out.Output) != "second life\n" {
		t.Fatalf("output of attempt 1: %+v %v", out, err)
	}
	// By place in the history, each attempt's own output.
	for i, want := range []string{"first life\n", "second life\n"} {
		if out, err := s.OutputAt(ctx(t), "r", i); err != nil || string(out.Output) != want || out.Number != 1 {
			t.Fatalf("output at %d: %+v %v, want attempt 1 with %q", i, out, err, want)
		}
	}
	if _, err := s.OutputAt(ctx(t), "r", 2); !errors.Is(err, queue.ErrNotFound) {
		t.Fatalf("output past the history: %v, want ErrNotFound", err)
	}
	if _, err := s.OutputAt(ctx(t), "nope", 0); !errors.Is(err, queue.ErrNotFound) {
		t.Fatalf("output of no job: %v, want ErrNotFound", err)
	}
	slow, err := s.SlowestAttempts(ctx(t), queue.SlowestParams{Since: t0.Add(-time.Minute), Limit: 5})
	if err != nil || len(slow) != 2 || slow[0].Duration != 1500*time.Millisecond || slow[1].Duration != time.Second {
		t.Fatalf("slowest attempts: %+v %v, want both, 1.5s then 1s", slow, err)
	}
	if n, err := s.PruneOutput(ctx(t), queue.PruneOutputParams{Before: later.Add(time.Hour), Limit: 1}); err != nil || n != 1 {
		t.Fatalf("prune one output: %d %v", n, err)
	}
	if n, err := s.PruneOutput(ctx(t), queue.PruneOutputParams{Before: later.Add(time.Hour)}); err != nil || n != 1 {
		t.Fatalf("prune the other: %d %v", n, err)
	}
	hist, err = s.Attempts(ctx(t), "r")
	if err != nil || len(hist) != 2 || hist[0].Dropped != int64(len("first life\n")) || hist[1].Dropped != int64(len("second life\n")) {
		t.Fatalf("history after pruning: %+v %v, want each attempt's output dropped", hist, err)
	}
	counted := func() int64 {
		rt, err := s.RunTimes(ctx(t), queue.RunTimeParams{Since: t0.Add(-time.Minute)})
		if err != nil {
			t.Fatal(err)
		}
		var n int64
		for _, c := range rt {
			n += c.N
		}
		return n
	}
	if n := counted(); n != 2 {
		t.Fatalf("run times count %d attempts, want 2", n)
	}
	if n, err := s.DeleteJobs(ctx(t), queue.DeleteParams{Before: later.Add(time.Hour)}); err != nil || n != 1 {
		t.Fatalf("delete: %d %v", n, err)
	}
	if n := counted(); n != 0 {
		t.Fatalf("run times count %d attempts after the job was deleted, want 0", n)
	}
}
