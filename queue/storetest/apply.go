package storetest

// A service's configuration file applied to the store: its queues, its
// queues' limits and the whole file in one transaction, by services
// starting and reloading at once.

import (
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/queuectl/queuectl/queue"
)

func testQueues(t *testing.T, open Opener) {
	s := open(t)
	qs := []queue.QueueConfig{
		{Name: "reports", Concurrency: 1, Retry: queue.Overrides{MaxRetries: ptr(5), BackoffBase: ptr(3.0), MaxBackoff: ptr(time.Minute), Timeout: ptr(time.Hour)}},
		{Name: "default", Concurrency: 4},
	}
	if err := s.ApplyQueues(ctx(t), qs); err != nil {
		t.Fatal(err)
	}
	got, err := s.Queues(ctx(t))
	if err != nil || len(got) != 2 || got[0].Name != "default" || got[0].Concurrency != 4 || got[0].Retry.MaxRetries != nil {
		t.Fatalf("queues: %+v %v", got, err)
	}
	r := got[1].Retry
	if got[1].Name != "reports" || *r.MaxRetries != 5 || *r.BackoffBase != 3 || *r.MaxBackoff != time.Minute || *r.Timeout != time.Hour {
		t.Fatalf("reports: %+v", got[1])
	}
	if err := s.ApplyQueues(ctx(t), qs[1:]); err != nil {
		t.Fatal(err)
	}
	if got, _ := s.Queues(ctx(t)); len(got) != 1 {
		t.Fatalf("a queue left out of the file must go: %+v", got)
	}
}

// testApplyConcurrently: services starting at once on one database (two
// handles, several rounds each) apply the same file at the same time;
// every apply succeeds and the queues and templates are the file's.
func testApplyConcurrently(t *testing.T, open Opener) {
	qs := []queue.QueueConfig{{Name: "default", Concurrency: 2}, {Name: "mail", Concurrency: 1, Retry: queue.Overrides{MaxRetries: ptr(5)}}}
	ts := []*queue.Template{template("a", queue.OverlapSkip), template("b", queue.OverlapAllow)}
	var wg sync.WaitGroup
	errs := make(chan error, 40)
	for h, s := range []queue.Store{open(t), open(t)} {
		// The second handle's file lists queues and jobs in the other
		// order: no order of locks may deadlock the two.
		hqs, hts := slices.Clone(qs), slices.Clone(ts)
		if h == 1 {
			slices.Reverse(hqs)
			slices.Reverse(hts)
		}
		var limits []queue.ControlUpdate
		for _, q := range hqs {
			limits = append(limits, queue.ControlUpdate{Names: []string{q.Name}, MaxRunning: ptr(q.Concurrency), Rate: &queue.RateLimit{}})
		}
		for g := range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for range 5 {
					if g%2 == 0 { // a file applied in one transaction (run)
						_, err := s.ApplyConfig(ctx(t), queue.ConfigApply{Queues: hqs, Limits: limits, Templates: hts, Now: t0})
						if err != nil {
							errs <- err
							return
						}
						continue
					}
					if err := s.ApplyQueues(ctx(t), hqs); err != nil {
						errs <- err
						return
					}
					if err := s.ApplyTemplates(ctx(t), hts, t0); err != nil {
						errs <- err
						return
					}
				}
			}()
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Errorf("apply at the same time as another service: %v", err)
	}
	s := open(t)
	if got, err := s.Queues(ctx(t)); err != nil || len(got) != 2 || got[1].Name != "mail" || *got[1].Retry.MaxRetries != 5 {
		t.Fatalf("queues: %+v %v", got, err)
	}
	if got := templatesByName(t, s); len(got) != 2 || got["a"] == nil || got["b"] == nil {
		t.Fatalf("templates: %v", got)
	}
}

// testControlsConcurrently: two services starting at once each put a
// queue's limits back to their file's, while a queue set changes them;
// every update succeeds, however they interleave.
func testControlsConcurrently(t *testing.T, open Opener) {
	var wg sync.WaitGroup
	errs := make(chan error, 40)
	for _, s := range []queue.Store{open(t), open(t)} {
		for i := range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for range 10 {
					limit := i % 2 * 2 // limited (2) or not (0), so the row comes and goes
					if err := s.UpdateQueueControls(ctx(t), queue.ControlUpdate{Names: []string{"mail"}, MaxRunning: &limit}); err != nil {
						errs <- err
						return
					}
				}
			}()
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Errorf("update controls at the same time as another service: %v", err)
	}
}

// testApplyConfig: a file's queues, limits and templates are applied
// together; the answer holds the limited queues' controls as they were
// (a pause is kept); a refused file changes nothing.
func testApplyConfig(t *testing.T, open Opener) {
	s := open(t)
	if err := s.UpdateQueueControls(ctx(t), queue.ControlUpdate{Names: []string{"mail"}, Paused: ptr(true), MaxRunning: ptr(5)}); err != nil {
		t.Fatal(err)
	}
	apply := queue.ConfigApply{
		Queues: []queue.QueueConfig{{Name: "mail", Concurrency: 1}, {Name: "web", Concurrency: 2}},
		Limits: []queue.ControlUpdate{
			{Names: []string{"web"}, MaxRunning: ptr(1), Rate: &queue.RateLimit{}},
			{Names: []string{"mail"}, MaxRunning: ptr(2), Rate: &queue.RateLimit{N: 10, Per: time.Minute}},
		},
		Templates: []*queue.Template{template("a", queue.OverlapSkip)},
		Now:       t0,
	}
	before, err := s.ApplyConfig(ctx(t), apply)
	if err != nil {
		t.Fatal(err)
	}
	if len(before) != 1 || before[0].Name != "mail" || !before[0].Paused || before[0].MaxRunning != 5 {
		t.Fatalf("controls before: %+v; want mail's alone, paused with 5 running at most", before)
	}
	check := func(when string) {
		t.Helper()
		if qs, err := s.Queues(ctx(t)); err != nil || len(qs) != 2 || qs[0].Name != "mail" || qs[1].Name != "web" {
			t.Fatalf("%s: queues %+v %v", when, qs, err)
		}
		cs, err := s.QueueControls(ctx(t))
		if err != nil || len(cs) != 2 || cs[0] != (queue.QueueControl{Name: "mail", Paused: true, MaxRunning: 2, Rate: queue.RateLimit{N: 10, Per: time.Minute}}) ||
			cs[1] != (queue.QueueControl{Name: "web", MaxRunning: 1}) {
			t.Fatalf("%s: controls %+v %v", when, cs, err)
		}
		if got := templatesByName(t, s); len(got) != 1 || got["a"] == nil {
			t.Fatalf("%s: templates %v", when, got)
		}
	}
	check("applied")
	bad := apply
	bad.Queues = []queue.QueueConfig{{Name: "other", Concurrency: 1}}
	bad.Templates = []*queue.Template{template("b", queue.OverlapSkip)}
	bad.Limits = append(slices.Clone(apply.Limits), queue.ControlUpdate{Names: []string{"a b"}, MaxRunning: ptr(1)})
	if _, err := s.ApplyConfig(ctx(t), bad); !errors.Is(err, queue.ErrInvalid) {
		t.Fatalf("a limit of a queue name no queue can have: %v; want ErrInvalid", err)
	}
	check("after a refused file")
}

// testApplyDifferentFilesConcurrently: services applying different files
// at once (a rolling change) never fail each other: every apply
// succeeds, and the store ends holding one of the two files whole.
func testApplyDifferentFilesConcurrently(t *testing.T, open Opener) {
	file := func(q, tpl string) queue.ConfigApply {
		return queue.ConfigApply{Queues: []queue.QueueConfig{{Name: q, Concurrency: 1}, {Name: "shared", Concurrency: 1}},
			Limits:    []queue.ControlUpdate{{Names: []string{q}, MaxRunning: ptr(1), Rate: &queue.RateLimit{}}},
			Templates: []*queue.Template{template(tpl, queue.OverlapSkip)}, Now: t0}
	}
	files := []queue.ConfigApply{file("x", "tx"), file("y", "ty")}
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for i, s := range []queue.Store{open(t), open(t)} {
		for range 2 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for range 10 {
					if _, err := s.ApplyConfig(ctx(t), files[i]); err != nil {
						errs <- err
						return
					}
				}
			}()
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Errorf("apply beside a service applying another file: %v", err)
	}
	s := open(t)
	qs, err := s.Queues(ctx(t))
	if err != nil || len(qs) != 2 {
		t.Fatalf("queues: %+v %v", qs, err)
	}
	tpl := map[string]string{"x": "tx", "y": "ty"}[qs[1].Name]
	if got := templatesByName(t, s); len(got) != 1 || got[tpl] == nil {
		t.Fatalf("queues %s and shared with templates %v: not one file's whole", qs[1].Name, got)
	}
}

// ApplyConfigFailingLate checks, on a store whose database refuses the
// recurring job refused (an error holding why), that a file refused
// part-way changes nothing: the queues and limits written before it in
// the same transaction are rolled back with it. Each store makes its
// database refuse a job in its own way.
func ApplyConfigFailingLate(t *testing.T, s queue.Store, refused *queue.Template, why string) {
	t.Helper()
	good := queue.ConfigApply{Queues: []queue.QueueConfig{{Name: "mail", Concurrency: 1}},
		Limits: []queue.ControlUpdate{{Names: []string{"mail"}, MaxRunning: ptr(1), Rate: &queue.RateLimit{}}}, Now: t0}
	if _, err := s.ApplyConfig(ctx(t), good); err != nil {
		t.Fatal(err)
	}
	bad := queue.ConfigApply{Queues: []queue.QueueConfig{{Name: "web", Concurrency: 1}},
		Limits:    []queue.ControlUpdate{{Names: []string{"web"}, MaxRunning: ptr(2), Rate: &queue.RateLimit{}}},
		Templates: []*queue.Template{refused}, Now: t0}
	if _, err := s.ApplyConfig(ctx(t), bad); err == nil || !strings.Contains(err.Error(), why) {
		t.Fatalf("a recurring job the database refuses: %v; want an error holding %q", err, why)
	}
	qs, err := s.Queues(ctx(t))
	if err != nil || len(qs) != 1 || qs[0].Name != "mail" {
		t.Fatalf("queues after the failed apply: %+v %v; want mail alone", qs, err)
	}
	cs, err := s.QueueControls(ctx(t))
	if err != nil || len(cs) != 1 || cs[0] != (queue.QueueControl{Name: "mail", MaxRunning: 1}) {
		t.Fatalf("controls after the failed apply: %+v %v; want mail's alone", cs, err)
	}
}
