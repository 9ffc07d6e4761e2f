package storetest

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/queuectl/queuectl/queue"
)

func template(name, overlap string) *queue.Template {
	return &queue.Template{
		Name: name, Queue: "default", Schedule: "* * * * *", TimeZone: "UTC", Command: "echo " + name,
		Env: map[string]string{"A": "b"}, Overlap: overlap, CatchUp: queue.CatchUpLatest, MaxCatchUp: 100,
		Jitter: time.Second, Priority: 3, Enabled: true, Retry: queue.Overrides{MaxRetries: ptr(2), Timeout: ptr(time.Minute)},
	}
}

func fireParams(t *testing.T, tpl *queue.Template, kind queue.FireKind, slot time.Time) queue.FireParams {
	t.Helper()
	j := job(t, "", func(n *queue.NewJob) {
		n.Command, n.Template, n.ScheduledAt = tpl.Command, tpl.Name, slot
	})
	return queue.FireParams{Template: tpl.Name, Kind: kind, Slot: slot, Job: j, Overlap: tpl.Overlap, Unique: tpl.Unique, Cursor: slot, Now: slot}
}

func fire(t *testing.T, s queue.Store, tpl *queue.Template, kind queue.FireKind, slot time.Time) queue.FireResult {
	t.Helper()
	res, err := s.FireTemplate(ctx(t), fireParams(t, tpl, kind, slot))
	if err != nil {
		t.Fatalf("fire %s at %v: %v", tpl.Name, slot, err)
	}
	return res
}

func templatesByName(t *testing.T, s queue.Store) map[string]*queue.Template {
	t.Helper()
	ts, err := s.Templates(ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]*queue.Template{}
	for _, x := range ts {
		out[x.Name] = x
	}
	return out
}

func testApplyTemplates(t *testing.T, open Opener) {
	s := open(t)
	a, b := template("a", queue.OverlapSkip), template("b", queue.OverlapAllow)
	if err := s.ApplyTemplates(ctx(t), []*queue.Template{a, b}, t0); err != nil {
		t.Fatal(err)
	}
	got := templatesByName(t, s)
	ga := got["a"]
	if len(got) != 2 || ga == nil || ga.Command != "echo a" || ga.Env["A"] != "b" || ga.Jitter != time.Second ||
		*ga.Retry.MaxRetries != 2 || *ga.Retry.Timeout != time.Minute || !ga.Cursor.Equal(t0) || ga.LastJob != nil {
		t.Fatalf("templates: %+v", ga)
	}
	fire(t, s, a, queue.FireCron, t0.Add(time.Minute))
	// Re-applying with a change keeps the cursor; a template left out is deleted.
	a.Command = "echo changed"
	if err := s.ApplyTemplates(ctx(t), []*queue.Template{a}, t0.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	got = templatesByName(t, s)
	if len(got) != 1 || got["a"].Command != "echo changed" || !got["a"].Cursor.Equal(t0.Add(time.Minute)) {
		t.Fatalf("after re-apply: %+v", got)
	}
	if got["a"].LastJob == nil || got["a"].LastJob.Template != "a" || !got["a"].LastJob.ScheduledAt.Equal(t0.Add(time.Minute)) {
		t.Fatalf("last job: %+v", got["a"].LastJob)
	}
	if got["a"].LastFinished != nil {
		t.Fatalf("a pending job counts as finished: %+v", got["a"].LastFinished)
	}
	// The last finished run stays the outcome while a newer one runs.
	j := claim(t, s, "w", 1, t0.Add(time.Hour))[0]
	finish(t, s, j, "w", succeeded(t0.Add(time.Hour), ""), t0.Add(time.Hour))
	fire(t, s, got["a"], queue.FireCron, t0.Add(2*time.Minute))
	claim(t, s, "w", 1, t0.Add(2*time.Hour))
	got = templatesByName(t, s)
	if f := got["a"].LastFinished; f == nil || f.ID != j.ID || f.State != queue.StateCompleted || got["a"].LastJob.State != queue.StateProcessing {
		t.Fatalf("last finished %+v, last job %+v", f, got["a"].LastJob)
	}
	if _, err := s.FireTemplate(ctx(t), fireParams(t, b, queue.FireCron, t0)); !errors.Is(err, queue.ErrNotFound) {
		t.Fatalf("firing a deleted template: want ErrNotFound, got %v", err)
	}
}

func testFireOncePerSlot(t *testing.T, open Opener) {
	s := open(t)
	tpl := template("t", queue.OverlapAllow)
	if err := s.ApplyTemplates(ctx(t), []*queue.Template{tpl}, t0); err != nil {
		t.Fatal(err)
	}
	const schedulers, slots = 4, 10
	var wg sync.WaitGroup
	var mu sync.Mutex
	fired := map[time.Time]int{}
	errs := make(chan error, schedulers*slots)
	for range schedulers {
		h := open(t)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 1; i <= slots; i++ {
				slot := t0.Add(time.Duration(i) * time.Minute)
				p := fireParams(t, tpl, queue.FireCron, slot)
				res, err := h.FireTemplate(ctx(t), p)
				if err != nil {
					errs <- err
					return
				}
				if res.JobID == "" {
					errs <- fmt.Errorf("slot %v: no job id in %+v", slot, res)
				}
				if res.Fired {
					mu.Lock()
					fired[slot]++
					mu.Unlock()
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	jobs, _ := s.ListJobs(ctx(t), queue.ListParams{})
	if len(jobs) != slots || len(fired) != slots {
		t.Fatalf("%d jobs for %d slots (fired %v)", len(jobs), slots, fired)
	}
	for slot, n := range fired {
		if n != 1 {
			t.Errorf("slot %v fired %d times", slot, n)
		}
	}
	if c := templatesByName(t, s)["t"].Cursor; !c.Equal(t0.Add(slots * time.Minute)) {
		t.Fatalf("cursor %v", c)
	}
}

func testOverlap(t *testing.T, open Opener) {
	s := open(t)
	skip, q, allow := template("skip", queue.OverlapSkip), template("queue", queue.OverlapQueue), template("allow", queue.OverlapAllow)
	if err := s.ApplyTemplates(ctx(t), []*queue.Template{skip, q, allow}, t0); err != nil {
		t.Fatal(err)
	}
	s1, s2 := t0.Add(time.Minute), t0.Add(2*time.Minute)
	for _, tpl := range []*queue.Template{skip, q, allow} {
		if res := fire(t, s, tpl, queue.FireCron, s1); !res.Fired {
			t.Fatalf("%s: first slot must fire: %+v", tpl.Name, res)
		}
	}
	// The first runs are pending (active): the second slot meets each policy.
	if res := fire(t, s, skip, queue.FireCron, s2); res.Fired || !res.Skipped {
		t.Fatalf("skip: %+v", res)
	}
	if res := fire(t, s, q, queue.FireCron, s2); res.Fired || !res.Queued {
		t.Fatalf("queue: %+v", res)
	}
	if res := fire(t, s, allow, queue.FireCron, s2); !res.Fired {
		t.Fatalf("allow: %+v", res)
	}
	got := templatesByName(t, s)
	if !got["skip"].Cursor.Equal(s2) || !got["queue"].Cursor.Equal(s2) {
		t.Fatalf("cursors: skip %v queue %v, want both %v", got["skip"].Cursor, got["queue"].Cursor, s2)
	}
	if q := got["queue"]; !q.PendingTrigger.Equal(s2) || q.PendingKind != queue.FireCron || !got["skip"].PendingTrigger.IsZero() {
		t.Fatalf("queue policy must remember the waiting slot: %v %q", q.PendingTrigger, q.PendingKind)
	}
	// A manual trigger meets the same policy; under queue it waits, in place
	// of the older waiting slot.
	if res := fire(t, s, q, queue.FireManual, s2.Add(time.Second)); !res.Queued {
		t.Fatalf("manual trigger under queue: %+v", res)
	}
	if q := templatesByName(t, s)["queue"]; !q.PendingTrigger.Equal(s2.Add(time.Second)) || q.PendingKind != queue.FireManual {
		t.Fatalf("pending trigger %v %q", q.PendingTrigger, q.PendingKind)
	}
	// Once the previous run ends, the queued slot and the trigger fire.
	for _, j := range claim(t, s, "w", 10, s2) {
		if j.Template == "queue" {
			finish(t, s, j, "w", succeeded(s2, ""), s2)
		}
	}
	if res := fire(t, s, q, queue.FireCron, s2); !res.Fired {
		t.Fatalf("queued slot after the previous run ended: %+v", res)
	}
	for _, j := range claim(t, s, "w", 10, s2) {
		finish(t, s, j, "w", succeeded(s2, ""), s2)
	}
	if res := fire(t, s, q, queue.FireManual, s2.Add(time.Second)); !res.Fired {
		t.Fatalf("pending trigger after the previous run ended: %+v", res)
	}
	if p := templatesByName(t, s)["queue"].PendingTrigger; !p.IsZero() {
		t.Fatalf("pending trigger not cleared: %v", p)
	}
}

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

// testEnabledAgainDropsWaitingRun: a run waiting behind the previous one
// (overlap = queue) when its job is disabled does not fire when the job
// is enabled again: like the slots missed meanwhile, it is from before
// the change.
func testEnabledAgainDropsWaitingRun(t *testing.T, open Opener) {
	s := open(t)
	q := template("q", queue.OverlapQueue)
	if err := s.ApplyTemplates(ctx(t), []*queue.Template{q}, t0); err != nil {
		t.Fatal(err)
	}
	fire(t, s, q, queue.FireCron, t0.Add(time.Minute))
	if res := fire(t, s, q, queue.FireCron, t0.Add(2*time.Minute)); !res.Queued {
		t.Fatalf("second slot should wait for the first run: %+v", res)
	}
	for i, enabled := range []bool{false, true} {
		q.Enabled = enabled
		if err := s.ApplyTemplates(ctx(t), []*queue.Template{q}, t0.Add(time.Duration(i+3)*time.Minute)); err != nil {
			t.Fatal(err)
		}
	}
	if p := templatesByName(t, s)["q"].PendingTrigger; !p.IsZero() {
		t.Fatalf("run waiting from before the job was disabled still waits after it is enabled again: %v", p)
	}
}

// testApplyTemplatesReschedules: a template whose schedule or time zone
// changes, or that is enabled again, starts from the time the file is
// applied, so no slot from before the change fires; other changes, and a
// clock behind the cursor, leave the cursor where it is.
func testApplyTemplatesReschedules(t *testing.T, open Opener) {
	s := open(t)
	a := template("a", queue.OverlapSkip)
	apply := func(at time.Duration, want time.Duration, what string) {
		t.Helper()
		if err := s.ApplyTemplates(ctx(t), []*queue.Template{a}, t0.Add(at)); err != nil {
			t.Fatal(err)
		}
		if got := templatesByName(t, s)["a"].Cursor; !got.Equal(t0.Add(want)) {
			t.Fatalf("%s: cursor %v, want %v", what, got, t0.Add(want))
		}
	}
	apply(0, 0, "new")
	fire(t, s, a, queue.FireCron, t0.Add(time.Minute))
	a.Command = "echo changed"
	apply(time.Hour, time.Minute, "command changed")
	a.Schedule = "0 3 * * *"
	apply(2*time.Hour, 2*time.Hour, "schedule changed")
	a.TimeZone = "Europe/Berlin"
	apply(3*time.Hour, 3*time.Hour, "time zone changed")
	a.Enabled = false
	apply(4*time.Hour, 3*time.Hour, "disabled")
	a.Enabled = true
	apply(5*time.Hour, 5*time.Hour, "enabled again")
	a.Schedule = "0 4 * * *"
	apply(time.Hour, 5*time.Hour, "schedule changed by a clock behind the cursor")
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

// testFireIDTaken: a slot whose job id another job holds (not this slot's
// fire: a copy, say) still fires, under an id of its own, exactly once.
func testFireIDTaken(t *testing.T, open Opener) {
	s := open(t)
	tpl := template("nightly", queue.OverlapAllow)
	if err := s.ApplyTemplates(ctx(t), []*queue.Template{tpl}, t0); err != nil {
		t.Fatal(err)
	}
	slot := t0.Add(time.Minute)
	p := fireParams(t, tpl, queue.FireCron, slot)
	p.Job.ID = "nightly-slot"
	insert(t, s, job(t, "nightly-slot", nil)) // not a fire
	res, err := s.FireTemplate(ctx(t), p)
	if err != nil || !res.Fired || res.JobID == "" || res.JobID == "nightly-slot" {
		t.Fatalf("fire of a slot whose id is taken: %+v %v; want fired under another id", res, err)
	}
	if got := get(t, s, res.JobID); got.Template != "nightly" {
		t.Fatalf("the fired job: %+v", got)
	}
	again := fireParams(t, tpl, queue.FireCron, slot)
	again.Job.ID = "nightly-slot"
	if res2, err := s.FireTemplate(ctx(t), again); err != nil || res2.Fired || res2.JobID != res.JobID {
		t.Fatalf("the same slot again: %+v %v; want the job fired before, %s", res2, err, res.JobID)
	}
}
