package storetest

import (
	"errors"
	"fmt"
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

// testEnabledAgainDropsWaitingRun: a slot's run waiting behind the
// previous one (overlap = queue) when its job is disabled does not fire
// when the job is enabled again: like the slots missed meanwhile, it is
// from before the change. A run triggered by hand still waits: someone
// asked for it.
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

	m := template("m", queue.OverlapQueue)
	if err := s.ApplyTemplates(ctx(t), []*queue.Template{m}, t0); err != nil {
		t.Fatal(err)
	}
	fire(t, s, m, queue.FireCron, t0.Add(time.Minute))
	m.Enabled = false
	if err := s.ApplyTemplates(ctx(t), []*queue.Template{m}, t0.Add(2*time.Minute)); err != nil {
		t.Fatal(err)
	}
	if res := fire(t, s, m, queue.FireManual, t0.Add(3*time.Minute)); !res.Queued {
		t.Fatalf("a trigger by hand should wait for the first run: %+v", res)
	}
	m.Enabled = true
	if err := s.ApplyTemplates(ctx(t), []*queue.Template{m}, t0.Add(4*time.Minute)); err != nil {
		t.Fatal(err)
	}
	if got := templatesByName(t, s)["m"]; got.PendingTrigger.IsZero() || got.PendingKind != queue.FireManual {
		t.Fatalf("a run triggered by hand while the job was disabled was dropped when it was enabled again: %+v", got)
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
