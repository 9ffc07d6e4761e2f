package storetest

import (
	"errors"
	"fmt"
	"sort"
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
	if _, err := s.Output(ctx(t), "a", 9); !errors.Is(err, queue.ErrNotFound) {
		t.Fatalf("missing attempt: %v", err)
	}
	if _, err := s.Output(ctx(t), "nope", 0); !errors.Is(err, queue.ErrNotFound) {
		t.Fatalf("missing job: %v", err)
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
