package scheduler_test

import (
	"context"
	"fmt"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/queuectl/queuectl/internal/testutil/fakeclock"
	"github.com/queuectl/queuectl/internal/testutil/syncbuf"
	"github.com/queuectl/queuectl/queue"
	"github.com/queuectl/queuectl/queue/sqlite"
	"github.com/queuectl/queuectl/scheduler"
	"github.com/rs/zerolog"
)

type fixture struct {
	t     *testing.T
	path  string
	store queue.Store
	clock *fakeclock.Clock
}

func newFixture(t *testing.T, start time.Time, templates ...*queue.Template) *fixture {
	t.Helper()
	f := &fixture{t: t, path: filepath.Join(t.TempDir(), "queue.db"), clock: fakeclock.New(start.UTC())}
	f.store = f.open()
	if err := f.store.ApplyTemplates(context.Background(), templates, start.UTC()); err != nil {
		t.Fatal(err)
	}
	return f
}

func (f *fixture) open() queue.Store {
	f.t.Helper()
	s, err := sqlite.Open(context.Background(), f.path)
	if err != nil {
		f.t.Fatal(err)
	}
	f.t.Cleanup(func() { s.Close() })
	return s
}

func (f *fixture) scheduler(st queue.Store) *scheduler.Scheduler {
	return scheduler.New(st, scheduler.Config{Clock: f.clock, Rand: func() float64 { return 0.5 }})
}

func (f *fixture) tick(s *scheduler.Scheduler, at time.Time) {
	f.t.Helper()
	f.clock.Set(at.UTC())
	if _, err := s.Tick(context.Background()); err != nil {
		f.t.Fatalf("tick at %v: %v", at, err)
	}
}

// slots returns the scheduled_at of every job of the template, in order.
// cursor is the cursor of the fixture's one template.
func (f *fixture) cursor() time.Time {
	f.t.Helper()
	ts, err := f.store.Templates(context.Background())
	if err != nil || len(ts) != 1 {
		f.t.Fatalf("templates: %v, %v; want one", ts, err)
	}
	return ts[0].Cursor
}

func (f *fixture) slots(name string) []time.Time {
	f.t.Helper()
	jobs, err := f.store.ListJobs(context.Background(), queue.ListParams{})
	if err != nil {
		f.t.Fatal(err)
	}
	var out []time.Time
	for _, j := range jobs {
		if j.Template == name {
			out = append(out, j.ScheduledAt)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Before(out[j]) })
	return out
}

// finishAll completes every claimable job, as a worker would.
func (f *fixture) finishAll(at time.Time) {
	f.t.Helper()
	ctx := context.Background()
	jobs, err := f.store.ClaimJobs(ctx, queue.ClaimParams{Worker: "w", Limit: 1000, Now: at.Add(time.Hour), LeaseUntil: at.Add(2 * time.Hour)})
	if err != nil {
		f.t.Fatal(err)
	}
	for _, j := range jobs {
		code := 0
		fin := queue.RetryPolicy{}.Decide(j, "w", queue.End{Outcome: queue.OutcomeSucceeded, ExitCode: &code, Started: at, Finished: at}, at)
		if _, err := f.store.FinishJobs(ctx, []queue.Finish{fin}); err != nil {
			f.t.Fatal(err)
		}
	}
}

func tpl(name, spec, zone string, mod func(*queue.Template)) *queue.Template {
	t := &queue.Template{Name: name, Queue: "default", Schedule: spec, TimeZone: zone, Command: "true",
		Overlap: queue.OverlapAllow, CatchUp: queue.CatchUpLatest, MaxCatchUp: 100, Enabled: true}
	if mod != nil {
		mod(t)
	}
	return t
}

func utc(s string) time.Time {
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		panic(err)
	}
	return t
}

func times(ss ...string) []time.Time {
	var out []time.Time
	for _, s := range ss {
		out = append(out, utc(s))
	}
	return out
}

func sameTimes(a, b []time.Time) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !a[i].Equal(b[i]) {
			return false
		}
	}
	return true
}

func TestCatchUpAfterThreeDayOutage(t *testing.T) {
	start := utc("2026-05-01T01:00:00Z")
	// The service fires the 02:00 slot of May 1, then is down until May 4 10:00.
	tests := []struct {
		policy string
		max    int
		want   []time.Time
	}{
		{queue.CatchUpNone, 100, times("2026-05-01T02:00:00Z")},
		{queue.CatchUpLatest, 100, times("2026-05-01T02:00:00Z", "2026-05-04T02:00:00Z")},
		{queue.CatchUpAll, 100, times("2026-05-01T02:00:00Z", "2026-05-02T02:00:00Z", "2026-05-03T02:00:00Z", "2026-05-04T02:00:00Z")},
		{queue.CatchUpAll, 2, times("2026-05-01T02:00:00Z", "2026-05-03T02:00:00Z", "2026-05-04T02:00:00Z")},
	}
	for _, tc := range tests {
		t.Run(tc.policy, func(t *testing.T) {
			f := newFixture(t, start, tpl("daily", "0 2 * * *", "UTC", func(x *queue.Template) { x.CatchUp, x.MaxCatchUp = tc.policy, tc.max }))
			s := f.scheduler(f.store)
			f.tick(s, utc("2026-05-01T02:00:00Z"))
			f.tick(s, utc("2026-05-04T10:00:00Z"))
			f.tick(s, utc("2026-05-04T10:00:05Z")) // nothing new
			if got := f.slots("daily"); !sameTimes(got, tc.want) {
				t.Fatalf("fired %v, want %v", got, tc.want)
			}
			if got := f.cursor(); !got.Equal(utc("2026-05-04T02:00:00Z")) {
				t.Fatalf("cursor %v, want the last slot handled", got)
			}
		})
	}
}

func TestOverlapPolicies(t *testing.T) {
	start := utc("2026-05-01T00:00:00Z")
	for _, policy := range []string{queue.OverlapSkip, queue.OverlapQueue, queue.OverlapAllow} {
		t.Run(policy, func(t *testing.T) {
			f := newFixture(t, start, tpl("m", "* * * * *", "UTC", func(x *queue.Template) { x.Overlap = policy }))
			s := f.scheduler(f.store)
			// Minute 1 fires; its job stays pending (no worker) while minutes 2 and 3 come.
			f.tick(s, utc("2026-05-01T00:01:00Z"))
			f.tick(s, utc("2026-05-01T00:02:00Z"))
			f.tick(s, utc("2026-05-01T00:03:00Z"))
			got := f.slots("m")
			// Then the first run finishes, and minute 3's tick comes again.
			f.finishAll(utc("2026-05-01T00:03:10Z"))
			f.tick(s, utc("2026-05-01T00:03:20Z"))
			after := f.slots("m")
			switch policy {
			case queue.OverlapSkip:
				// 2 and 3 were skipped; nothing fires until minute 4.
				if !sameTimes(got, times("2026-05-01T00:01:00Z")) || len(after) != 1 {
					t.Fatalf("skip: before %v after %v", got, after)
				}
			case queue.OverlapQueue:
				// Minutes 2 and 3 wait for minute 1's run; only the newest
				// waiting run is kept, and it fires once the first has ended.
				if !sameTimes(got, times("2026-05-01T00:01:00Z")) || !sameTimes(after, times("2026-05-01T00:01:00Z", "2026-05-01T00:03:00Z")) {
					t.Fatalf("queue: before %v after %v", got, after)
				}
			case queue.OverlapAllow:
				if len(got) != 3 || len(after) != 3 {
					t.Fatalf("allow: before %v after %v", got, after)
				}
			}
		})
	}
}

// A trigger by hand follows the overlap policy, and one that waits for the
// previous run starts when that run ends, though the job be disabled: the
// trigger said it would, and the scheduler skipped a disabled job's waiting
// run for ever.
func TestManualTriggerFollowsOverlap(t *testing.T) {
	for _, enabled := range []bool{true, false} {
		t.Run(fmt.Sprintf("enabled=%t", enabled), func(t *testing.T) {
			f := newFixture(t, utc("2026-05-01T00:00:00Z"), tpl("m", "@daily", "UTC", func(x *queue.Template) {
				x.Overlap, x.Enabled = queue.OverlapQueue, enabled
			}))
			ctx := context.Background()
			d, err := scheduler.LoadDefaults(ctx, f.store)
			if err != nil {
				t.Fatal(err)
			}
			ts, _ := f.store.Templates(ctx)
			at := utc("2026-05-01T00:00:01Z")
			if res, err := scheduler.Fire(ctx, f.store, ts[0], d, queue.FireManual, at, at, nil); err != nil || !res.Fired {
				t.Fatalf("first trigger: %+v %v", res, err)
			}
			at2 := utc("2026-05-01T00:00:02Z")
			if res, _ := scheduler.Fire(ctx, f.store, ts[0], d, queue.FireManual, at2, at2, nil); !res.Queued {
				t.Fatalf("second trigger must wait: %+v", res)
			}
			s := f.scheduler(f.store)
			f.tick(s, utc("2026-05-01T00:00:03Z"))
			if n := len(f.slots("m")); n != 1 {
				t.Fatalf("the queued trigger fired while the first run is active: %d jobs", n)
			}
			f.finishAll(utc("2026-05-01T00:00:04Z"))
			f.tick(s, utc("2026-05-01T00:00:05Z"))
			if got := f.slots("m"); !sameTimes(got, []time.Time{at, at2}) {
				t.Fatalf("after the first run ended: %v", got)
			}
			// Fired, it waits no more, and fires nothing else.
			f.finishAll(utc("2026-05-01T00:00:06Z"))
			f.tick(s, utc("2026-05-01T00:00:07Z"))
			if got := f.slots("m"); len(got) != 2 {
				t.Fatalf("after the waiting run: %v", got)
			}
		})
	}
}

// A disabled job's waiting run that cannot fire (its command, changed
// since the trigger, is one the store refuses) logs its error once, as an
// enabled job's failure does, not at every tick.
func TestDisabledJobsWaitingRunLogsFailureOnce(t *testing.T) {
	start := utc("2026-05-01T00:00:00Z")
	off := tpl("off", "@daily", "UTC", func(x *queue.Template) { x.Overlap, x.Enabled = queue.OverlapQueue, false })
	f := newFixture(t, start, off)
	ctx := context.Background()
	d, err := scheduler.LoadDefaults(ctx, f.store)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 2 { // the first runs, the second waits
		at := start.Add(time.Duration(i+1) * time.Second)
		if _, err := scheduler.Fire(ctx, f.store, off, d, queue.FireManual, at, at, nil); err != nil {
			t.Fatal(err)
		}
	}
	off.Command = strings.Repeat("x", queue.MaxArgLen+1)
	if err := f.store.ApplyTemplates(ctx, []*queue.Template{off}, start); err != nil {
		t.Fatal(err)
	}
	f.finishAll(start.Add(3 * time.Second))
	var logs syncbuf.Buffer
	s := scheduler.New(f.store, scheduler.Config{Clock: f.clock, Log: zerolog.New(&logs)})
	f.tickEvery(s, start.Add(4*time.Second), start.Add(30*time.Second), time.Second)
	if n := strings.Count(logs.String(), `"message":"fire template"`); n != 1 {
		t.Errorf("%d fire template lines for 27 failing ticks within a minute, want 1:\n%s", n, logs.String())
	}
}

// tickEvery ticks s from..to (inclusive) every step and returns the UTC
// slots fired.
func (f *fixture) tickEvery(s *scheduler.Scheduler, from, to time.Time, step time.Duration) {
	f.t.Helper()
	for at := from; !at.After(to); at = at.Add(step) {
		f.tick(s, at)
	}
}

func TestDaylightSavingTimeNewYork(t *testing.T) {
	tests := []struct {
		name      string
		spec      string
		from, to  string
		wantSlots []time.Time
	}{
		{
			// 2026-03-08: 02:00 EST jumps to 03:00 EDT; 02:30 does not exist.
			name: "spring-forward slot runs once at the transition", spec: "30 2 * * *",
			from: "2026-03-07T12:00:00Z", to: "2026-03-09T12:00:00Z",
			wantSlots: times("2026-03-08T07:00:00Z", "2026-03-09T06:30:00Z"),
		},
		{
			// 2026-11-01: 02:00 EDT falls back to 01:00 EST; 01:30 happens twice.
			name: "fall-back slot runs once", spec: "30 1 * * *",
			from: "2026-10-31T12:00:00Z", to: "2026-11-02T12:00:00Z",
			wantSlots: times("2026-11-01T05:30:00Z", "2026-11-02T06:30:00Z"),
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			from := utc(tc.from)
			f := newFixture(t, from, tpl("dst", tc.spec, "America/New_York", nil))
			s := f.scheduler(f.store)
			f.tickEvery(s, from, utc(tc.to), time.Minute)
			if got := f.slots("dst"); !sameTimes(got, tc.wantSlots) {
				t.Fatalf("fired %v, want %v", got, tc.wantSlots)
			}
		})
	}
}

func TestTwoSchedulersFireEachSlotOnce(t *testing.T) {
	from := utc("2026-05-01T00:00:00Z")
	f := newFixture(t, from, tpl("s", "*/10 * * * * *", "UTC", nil))
	a, b := f.scheduler(f.store), f.scheduler(f.open())
	var wg sync.WaitGroup
	for _, s := range []*scheduler.Scheduler{a, b} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for at := from; !at.After(from.Add(5 * time.Minute)); at = at.Add(time.Second) {
				f.clock.Set(at.UTC()) // both see the same clock; ticks interleave freely
				if _, err := s.Tick(context.Background()); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	got := f.slots("s")
	seen := map[time.Time]bool{}
	for _, slot := range got {
		if seen[slot] {
			t.Fatalf("slot %v fired twice", slot)
		}
		seen[slot] = true
	}
	// 30 slots in 5 minutes; interleaved clocks may leave the last one or two
	// for a later tick, never fire one twice.
	if len(got) < 28 || len(got) > 30 {
		t.Fatalf("%d jobs for 30 slots: %v", len(got), got)
	}
}

func TestEveryIsAnchoredToTheCursor(t *testing.T) {
	start := utc("2026-05-01T00:00:07Z")
	f := newFixture(t, start, tpl("e", "@every 90s", "UTC", func(x *queue.Template) { x.CatchUp = queue.CatchUpAll }))
	s := f.scheduler(f.store)
	f.tick(s, start.Add(100*time.Second))
	// A new scheduler (a restart) carries on from the stored cursor.
	s2 := f.scheduler(f.open())
	f.tick(s2, start.Add(200*time.Second))
	want := []time.Time{start.Add(90 * time.Second), start.Add(180 * time.Second)}
	if got := f.slots("e"); !sameTimes(got, want) {
		t.Fatalf("fired %v, want %v", got, want)
	}
}

// After an outage an "@every" template's catch-up keeps to its grid
// (cursor + k·interval): "latest" fires the latest slot on it, "none"
// fires nothing when that slot is late.
func TestEveryCatchUpKeepsItsGrid(t *testing.T) {
	start := utc("2026-05-01T00:00:07.5Z")
	for _, tc := range []struct {
		policy string
		want   []time.Time
	}{
		{queue.CatchUpLatest, []time.Time{start.Add(180 * time.Second)}},
		{queue.CatchUpNone, nil},
	} {
		t.Run(tc.policy, func(t *testing.T) {
			f := newFixture(t, start, tpl("e", "@every 90s", "UTC", func(x *queue.Template) { x.CatchUp = tc.policy }))
			f.tick(f.scheduler(f.store), start.Add(258*time.Second)) // slots at +90s and +180s, the latter 78s late
			if got := f.slots("e"); !sameTimes(got, tc.want) {
				t.Fatalf("fired %v, want %v", got, tc.want)
			}
			if got, want := f.cursor(), start.Add(180*time.Second); !got.Equal(want) {
				t.Fatalf("cursor %v, want %v (on the grid)", got, want)
			}
		})
	}
}

func TestFiredJobCarriesTemplateSettings(t *testing.T) {
	start := utc("2026-05-01T00:00:00Z")
	f := newFixture(t, start, tpl("j", "* * * * *", "UTC", func(x *queue.Template) {
		x.Queue, x.Jitter, x.Priority = "reports", 10*time.Second, 7
		x.Env = map[string]string{"K": "v"}
		x.Retry.Timeout = func() *time.Duration { d := time.Minute; return &d }()
	}))
	ctx := context.Background()
	retries := 5
	if err := f.store.ApplyQueues(ctx, []queue.QueueConfig{{Name: "reports", Concurrency: 1, Retry: queue.Overrides{MaxRetries: &retries}}}); err != nil {
		t.Fatal(err)
	}
	s := f.scheduler(f.store)
	f.tick(s, utc("2026-05-01T00:01:00Z"))
	jobs, _ := f.store.ListJobs(ctx, queue.ListParams{})
	if len(jobs) != 1 {
		t.Fatalf("jobs: %d", len(jobs))
	}
	j := jobs[0]
	if j.Queue != "reports" || j.MaxRetries != 5 || j.Timeout != time.Minute || j.Priority != 7 || j.Env["K"] != "v" ||
		!j.RunAt.Equal(utc("2026-05-01T00:01:05Z")) || !j.ScheduledAt.Equal(utc("2026-05-01T00:01:00Z")) {
		t.Fatalf("fired job: %+v", j)
	}
	env := map[string]bool{}
	for _, e := range j.Environ() {
		env[e] = true
	}
	if !env["QUEUECTL_TEMPLATE=j"] || !env["QUEUECTL_SCHEDULED_AT=2026-05-01T00:01:00Z"] {
		t.Fatalf("environment: %v", j.Environ())
	}
}

func TestDisabledTemplateDoesNotFire(t *testing.T) {
	start := utc("2026-05-01T00:00:00Z")
	f := newFixture(t, start, tpl("off", "* * * * *", "UTC", func(x *queue.Template) { x.Enabled = false }))
	f.tick(f.scheduler(f.store), start.Add(10*time.Minute))
	if got := f.slots("off"); len(got) != 0 {
		t.Fatalf("disabled template fired %v", got)
	}
}

// A template whose jobs cannot be stored must not stop the others, and a
// name as long as the file allows still gets fired.
func TestLongNameFiresAndDoesNotBlockOthers(t *testing.T) {
	start := utc("2026-05-01T00:00:00Z")
	long := strings.Repeat("a", 200)
	f := newFixture(t, start, tpl(long, "* * * * *", "UTC", nil), tpl("zz", "* * * * *", "UTC", nil))
	s := f.scheduler(f.store)
	f.tick(s, start.Add(time.Minute))
	if got := f.slots(long); len(got) != 1 {
		t.Fatalf("long-named template fired %d times", len(got))
	}
	if got := f.slots("zz"); len(got) != 1 {
		t.Fatalf("zz fired %d times", len(got))
	}
}

// A long name of multi-byte characters is shortened on a character
// boundary: an id cut inside a character is not valid UTF-8, which the
// store refuses, and the template would never fire.
func TestLongMultiByteNameFires(t *testing.T) {
	start := utc("2026-05-01T00:00:00Z")
	long := "a" + strings.Repeat("€", 66) // 199 bytes
	f := newFixture(t, start, tpl(long, "* * * * *", "UTC", nil))
	s := f.scheduler(f.store)
	f.tick(s, start.Add(time.Minute))
	if got := f.slots(long); len(got) != 1 {
		t.Fatalf("long multi-byte named template fired %d times", len(got))
	}
}

// countingSchedule counts the Next calls made on a schedule.
type countingSchedule struct {
	scheduler.Nexter
	calls int
}

func (c *countingSchedule) Next(t time.Time) time.Time {
	c.calls++
	return c.Nexter.Next(t)
}

// A per-second schedule down for seven years has about 220 million missed
// slots; walking them would take minutes, so the test would fail by its
// timeout, and the call count bounds the work whatever the machine.
func TestLatestAfterYearsLongOutageDoesNotScan(t *testing.T) {
	cursor := utc("2019-03-01T00:00:00Z")
	now := utc("2026-03-01T12:34:56Z").Add(400 * time.Millisecond)
	for _, spec := range []string{"* * * * * *", "@every 1s", "*/7 * * * * *", "0 0 29 2 *"} {
		t.Run(spec, func(t *testing.T) {
			sc, err := scheduler.Parse(tpl("x", spec, "UTC", nil))
			if err != nil {
				t.Fatal(err)
			}
			c := &countingSchedule{Nexter: sc}
			last, n := scheduler.Latest(c, cursor, now)
			if c.calls > 200 {
				t.Errorf("Latest made %d Next calls; want a bound that does not grow with the slots", c.calls)
			}
			if n != 2 || last.IsZero() || last.After(now) {
				t.Fatalf("Latest = %v, %d; want a slot at or before %v and n = 2", last, n, now)
			}
			if next := sc.Next(last); !next.After(now) {
				t.Fatalf("Latest = %v, but %v is a later slot before now", last, next)
			}
		})
	}
}

func TestLatestOfEveryIsOnItsGrid(t *testing.T) {
	sc, err := scheduler.Parse(tpl("e", "@every 90s", "UTC", nil))
	if err != nil {
		t.Fatal(err)
	}
	cursor := utc("2026-05-01T14:54:47.67Z")
	for _, tc := range []struct {
		after time.Duration
		last  time.Duration
		n     int
	}{
		{89 * time.Second, 0, 0},
		{90 * time.Second, 90 * time.Second, 1},
		{179 * time.Second, 90 * time.Second, 1},
		{258 * time.Second, 180 * time.Second, 2},
		{365 * 24 * time.Hour, 365 * 24 * time.Hour, 2},
	} {
		last, n := scheduler.Latest(sc, cursor, cursor.Add(tc.after))
		want := time.Time{}
		if tc.n > 0 {
			want = cursor.Add(tc.last)
		}
		if !last.Equal(want) || n != tc.n {
			t.Errorf("Latest(cursor + %s) = %v, %d; want %v, %d", tc.after, last, n, want, tc.n)
		}
	}
}

func TestLatestCountsSlots(t *testing.T) {
	sc, err := scheduler.Parse(tpl("x", "0 * * * *", "UTC", nil))
	if err != nil {
		t.Fatal(err)
	}
	cursor := utc("2026-05-01T01:00:00Z")
	tests := []struct {
		now  string
		last string
		n    int
	}{
		{"2026-05-01T01:59:59Z", "", 0},
		{"2026-05-01T02:00:00Z", "2026-05-01T02:00:00Z", 1},
		{"2026-05-01T02:59:59Z", "2026-05-01T02:00:00Z", 1},
		{"2026-05-01T03:00:00Z", "2026-05-01T03:00:00Z", 2},
		{"2026-05-09T07:30:00Z", "2026-05-09T07:00:00Z", 2},
	}
	for _, tc := range tests {
		last, n := scheduler.Latest(sc, cursor, utc(tc.now))
		want := time.Time{}
		if tc.last != "" {
			want = utc(tc.last)
		}
		if !last.Equal(want) || n != tc.n {
			t.Errorf("Latest(now %s) = %v, %d; want %v, %d", tc.now, last, n, want, tc.n)
		}
	}
}

// The scheduler itself takes the fast path: after a years-long outage of a
// per-second template it fires the latest slot only (a scan would stop at
// its one-million-slot bound and fire a slot years old).
func TestCatchUpLatestAfterYearsLongOutage(t *testing.T) {
	start := utc("2021-03-01T00:00:00Z")
	for _, policy := range []string{queue.CatchUpLatest, queue.CatchUpNone} {
		t.Run(policy, func(t *testing.T) {
			f := newFixture(t, start, tpl("tick", "* * * * * *", "UTC", func(x *queue.Template) { x.CatchUp = policy }))
			s := f.scheduler(f.store)
			back := utc("2026-03-01T12:00:00Z")
			f.tick(s, back)
			want := times("2026-03-01T12:00:00Z")
			if got := f.slots("tick"); !sameTimes(got, want) {
				t.Fatalf("fired %v, want %v", got, want)
			}
			if got := f.cursor(); !got.Equal(back) {
				t.Fatalf("cursor %v, want %v", got, back)
			}
		})
	}
}

// The time Tick says to look again is the next slot on an "@every"
// template's grid (cursor + k·interval), not an interval after now, so the
// loop wakes when the slot is due rather than up to a tick late.
func TestTickReturnsTheNextSlotOfEvery(t *testing.T) {
	start := utc("2026-05-01T00:00:07.5Z")
	f := newFixture(t, start, tpl("e", "@every 90s", "UTC", nil))
	s := f.scheduler(f.store)
	for _, tc := range []struct {
		at, want time.Time
	}{
		{start.Add(10 * time.Second), start.Add(90 * time.Second)},
		{start.Add(90 * time.Second), start.Add(180 * time.Second)}, // fires the slot at +90s
		{start.Add(100 * time.Second), start.Add(180 * time.Second)},
	} {
		f.clock.Set(tc.at)
		next, err := s.Tick(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if !next.Equal(tc.want) {
			t.Errorf("Tick at %v: next %v, want %v", tc.at, next, tc.want)
		}
	}
}

// catch_up = "all" fires at most max_catch_up slots, the most recent, even
// when more missed slots lie between the cursor and now than one walk
// covers: the walk starts close enough to now, so a later tick does not
// fire another batch.
func TestCatchUpAllAfterMoreSlotsThanOneWalk(t *testing.T) {
	start := utc("2026-03-01T00:00:00Z")
	for _, spec := range []string{"* * * * * *", "@every 1s"} {
		t.Run(spec, func(t *testing.T) {
			f := newFixture(t, start, tpl("tick", spec, "UTC", func(x *queue.Template) { x.CatchUp, x.MaxCatchUp = queue.CatchUpAll, 3 }))
			s := f.scheduler(f.store)
			back := start.Add(1_200_000 * time.Second) // 1.2 million slots missed
			f.tick(s, back)
			f.tick(s, back) // nothing more is due
			want := []time.Time{back.Add(-2 * time.Second), back.Add(-time.Second), back}
			if got := f.slots("tick"); !sameTimes(got, want) {
				t.Fatalf("fired %v, want %v", got, want)
			}
			if got := f.cursor(); !got.Equal(back) {
				t.Fatalf("cursor %v, want %v", got, back)
			}
		})
	}
}

// A template that fails at every tick (here its job is one the store
// refuses) logs its error once, then once a minute, not every second; the
// others keep firing.
func TestFailingTemplateLogsOncePerMinute(t *testing.T) {
	start := utc("2026-05-01T00:00:00Z")
	bad := tpl("bad", "* * * * * *", "UTC", func(x *queue.Template) { x.Command = strings.Repeat("x", queue.MaxArgLen+1) })
	zone := tpl("zone", "* * * * * *", "Nowhere/Zone", nil)
	f := newFixture(t, start, bad, zone, tpl("good", "* * * * * *", "UTC", nil))
	var logs syncbuf.Buffer
	s := scheduler.New(f.store, scheduler.Config{Clock: f.clock, Log: zerolog.New(&logs)})
	f.tickEvery(s, start.Add(time.Second), start.Add(30*time.Second), time.Second)
	out := logs.String()
	for _, msg := range []string{"fire template", "bad schedule; template skipped"} {
		if n := strings.Count(out, `"message":"`+msg+`"`); n != 1 {
			t.Errorf("%d %q lines for 30 failing ticks within a minute, want 1:\n%s", n, msg, out)
		}
	}
	if got := f.slots("good"); len(got) != 30 {
		t.Errorf("good fired %d times in 30 seconds", len(got))
	}
	f.tick(s, start.Add(91*time.Second))
	if n := strings.Count(logs.String(), `"message":"fire template"`); n != 2 {
		t.Errorf("%d fire template lines after a minute, want 2", n)
	}
}
