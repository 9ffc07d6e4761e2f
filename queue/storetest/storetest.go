// Package storetest is the conformance suite every queue.Store must pass on
// a real database: claim order and exclusivity, retry scheduling, the
// dead-letter transition, lease-expiry rescue, heartbeats, cancellation,
// history and output, cleanup, config, the worker registry, declared queues
// and recurring-job templates (one job per slot, overlap policies).
//
// A store package runs it with storetest.Run(t, open), where open returns
// a function that opens a new handle on one fresh, empty database per test
// (several handles on the same database stand in for several processes).
package storetest

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/queuectl/queuectl/queue"
)

// Opener opens another handle on the test's database.
type Opener func(t *testing.T) queue.Store

// NewDB prepares a fresh database for one test and returns its opener.
type NewDB func(t *testing.T) Opener

// t0 is a fixed, whole-microsecond instant the tests count from.
var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// Run runs the whole suite.
func Run(t *testing.T, newDB NewDB) {
	tests := []struct {
		name string
		fn   func(t *testing.T, open Opener)
	}{
		{"InsertAndGet", testInsertAndGet},
		{"DuplicateIDChangesNothing", testDuplicate},
		{"ClaimOrder", testClaimOrder},
		{"ClaimQueuesAndRunAt", testClaimQueuesAndRunAt},
		{"ClaimExclusiveAcrossHandles", testClaimExclusive},
		{"FinishChecksClaim", testFinishChecksClaim},
		{"RetrySchedulingAndDeadLetter", testRetryAndDead},
		{"RetryJobs", testRetryJobs},
		{"LeaseExpiryRescue", testLeaseRescue},
		{"Heartbeat", testHeartbeat},
		{"Cancel", testCancel},
		{"HistoryAndOutput", testHistoryAndOutput},
		{"DeleteFinished", testDelete},
		{"Config", testConfig},
		{"Workers", testWorkers},
		{"WakeupsAcrossHandles", testWakeups},
		{"ListAndCount", testListAndCount},
		{"ApplyTemplates", testApplyTemplates},
		{"FireOncePerSlot", testFireOncePerSlot},
		{"Overlap", testOverlap},
		{"Queues", testQueues},
		{"CancelWinsOverRetry", testCancelWinsOverRetry},
		{"ExpiredLeaseIsNotRenewed", testExpiredLeaseIsNotRenewed},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tc.fn(t, newDB(t))
		})
	}
}

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return c
}

func ptr[T any](v T) *T { return &v }

// job builds a resolved pending job created at t0+offset.
func job(t *testing.T, id string, mod func(n *queue.NewJob)) *queue.Job {
	t.Helper()
	n := queue.NewJob{ID: id, Command: "true"}
	if mod != nil {
		mod(&n)
	}
	j, err := n.Resolve(queue.DefaultSettings(), t0)
	if err != nil {
		t.Fatalf("resolve %s: %v", id, err)
	}
	return j
}

func insert(t *testing.T, s queue.Store, jobs ...*queue.Job) {
	t.Helper()
	if err := s.InsertJobs(ctx(t), jobs); err != nil {
		t.Fatalf("insert: %v", err)
	}
}

func claim(t *testing.T, s queue.Store, worker string, n int, now time.Time, queues ...string) []*queue.Job {
	t.Helper()
	jobs, err := s.ClaimJobs(ctx(t), queue.ClaimParams{Worker: worker, Queues: queues, Limit: n, Now: now, LeaseUntil: now.Add(30 * time.Second)})
	if err != nil {
		t.Fatalf("claim: %v", err)
	}
	return jobs
}

func ids(jobs []*queue.Job) []string {
	out := make([]string, len(jobs))
	for i, j := range jobs {
		out[i] = j.ID
	}
	return out
}

func get(t *testing.T, s queue.Store, id string) *queue.Job {
	t.Helper()
	j, err := s.GetJob(ctx(t), id)
	if err != nil {
		t.Fatalf("get %s: %v", id, err)
	}
	return j
}

func finish(t *testing.T, s queue.Store, j *queue.Job, worker string, e queue.End, now time.Time) queue.Finish {
	t.Helper()
	f := queue.RetryPolicy{}.Decide(j, worker, e, now)
	applied, err := s.FinishJobs(ctx(t), []queue.Finish{f})
	if err != nil {
		t.Fatalf("finish %s: %v", j.ID, err)
	}
	if !applied[0] {
		t.Fatalf("finish %s: not applied", j.ID)
	}
	return f
}

func failed(now time.Time) queue.End {
	code := 1
	return queue.End{Outcome: queue.OutcomeFailed, ExitCode: &code, Error: "exit status 1", Started: now, Finished: now}
}

func succeeded(now time.Time, output string) queue.End {
	code := 0
	return queue.End{Outcome: queue.OutcomeSucceeded, ExitCode: &code, Started: now, Finished: now.Add(1500 * time.Millisecond), Output: []byte(output)}
}

func equal(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func testInsertAndGet(t *testing.T, open Opener) {
	s := open(t)
	in := job(t, "a", func(n *queue.NewJob) {
		n.Queue, n.Priority, n.Timeout = "reports", 7, ptr(90*time.Second)
		n.MaxRetries, n.Env, n.Dir = ptr(5), map[string]string{"K": "v"}, "/tmp"
		n.RunAt = t0.Add(time.Minute)
	})
	insert(t, s, in)
	got := get(t, s, "a")
	if got.Queue != "reports" || got.Priority != 7 || got.Timeout != 90*time.Second || got.MaxRetries != 5 ||
		got.State != queue.StatePending || got.Attempts != 0 || got.Env["K"] != "v" || got.Dir != "/tmp" ||
		got.BackoffBase != 2 || got.MaxBackoff != time.Hour || got.Command != "true" {
		t.Fatalf("round trip changed the job: %+v", got)
	}
	if !got.RunAt.Equal(t0.Add(time.Minute)) || got.RunAt.Location() != time.UTC || !got.CreatedAt.Equal(t0) {
		t.Fatalf("times: run_at %v created_at %v", got.RunAt, got.CreatedAt)
	}
	if _, err := s.GetJob(ctx(t), "nope"); !errors.Is(err, queue.ErrNotFound) {
		t.Fatalf("get unknown: want ErrNotFound, got %v", err)
	}
}

func testDuplicate(t *testing.T, open Opener) {
	s := open(t)
	insert(t, s, job(t, "dup", nil))
	err := s.InsertJobs(ctx(t), []*queue.Job{job(t, "fresh", nil), job(t, "dup", nil)})
	if !errors.Is(err, queue.ErrDuplicate) {
		t.Fatalf("want ErrDuplicate, got %v", err)
	}
	if _, err := s.GetJob(ctx(t), "fresh"); !errors.Is(err, queue.ErrNotFound) {
		t.Fatalf("a failed batch must insert nothing; fresh: %v", err)
	}
}

func testClaimOrder(t *testing.T, open Opener) {
	s := open(t)
	insert(t, s,
		job(t, "low-old", func(n *queue.NewJob) { n.Priority = 0 }),
		job(t, "high", func(n *queue.NewJob) { n.Priority = 10 }),
		job(t, "low-later-run", func(n *queue.NewJob) { n.Priority = 0; n.RunAt = t0.Add(time.Second) }),
		job(t, "mid", func(n *queue.NewJob) { n.Priority = 5 }),
	)
	now := t0.Add(time.Minute)
	got := ids(claim(t, s, "w", 3, now))
	if want := []string{"high", "mid", "low-old"}; !equal(got, want) {
		t.Fatalf("claim order: got %v, want %v", got, want)
	}
	j := get(t, s, "high")
	if j.State != queue.StateProcessing || j.Attempts != 1 || j.Worker != "w" || !j.StartedAt.Equal(now) || !j.LeaseUntil.Equal(now.Add(30*time.Second)) {
		t.Fatalf("claimed job: %+v", j)
	}
	if got := ids(claim(t, s, "w", 3, now)); !equal(got, []string{"low-later-run"}) {
		t.Fatalf("second claim: got %v", got)
	}
	if got := claim(t, s, "w", 3, now); len(got) != 0 {
		t.Fatalf("nothing left, got %v", ids(got))
	}
}

func testClaimQueuesAndRunAt(t *testing.T, open Opener) {
	s := open(t)
	insert(t, s,
		job(t, "d", nil),
		job(t, "r", func(n *queue.NewJob) { n.Queue = "reports" }),
		job(t, "future", func(n *queue.NewJob) { n.RunAt = t0.Add(time.Hour) }),
	)
	if got := ids(claim(t, s, "w", 10, t0, "reports")); !equal(got, []string{"r"}) {
		t.Fatalf("queue filter: got %v", got)
	}
	next, err := s.NextRunAt(ctx(t), nil)
	if err != nil || !next.Equal(t0) {
		t.Fatalf("next run at: %v %v", next, err)
	}
	if got := ids(claim(t, s, "w", 10, t0)); !equal(got, []string{"d"}) {
		t.Fatalf("future job must wait: got %v", got)
	}
	next, err = s.NextRunAt(ctx(t), nil)
	if err != nil || !next.Equal(t0.Add(time.Hour)) {
		t.Fatalf("next run at: %v %v", next, err)
	}
	if next, _ := s.NextRunAt(ctx(t), []string{"reports"}); !next.IsZero() {
		t.Fatalf("reports has nothing runnable, next = %v", next)
	}
	if got := ids(claim(t, s, "w", 10, t0.Add(time.Hour))); !equal(got, []string{"future"}) {
		t.Fatalf("due job: got %v", got)
	}
}

func testClaimExclusive(t *testing.T, open Opener) {
	const n, handles, perHandle = 300, 3, 4
	s := open(t)
	var jobs []*queue.Job
	for i := range n {
		jobs = append(jobs, job(t, fmt.Sprintf("j%04d", i), nil))
	}
	insert(t, s, jobs...)
	var mu sync.Mutex
	seen := map[string]string{}
	var wg sync.WaitGroup
	errs := make(chan error, handles*perHandle)
	for h := range handles {
		hs := open(t)
		for g := range perHandle {
			wg.Add(1)
			go func() {
				defer wg.Done()
				worker := fmt.Sprintf("w%d-%d", h, g)
				for {
					got, err := hs.ClaimJobs(context.Background(), queue.ClaimParams{Worker: worker, Limit: 3, Now: t0, LeaseUntil: t0.Add(time.Minute)})
					if err != nil {
						errs <- err
						return
					}
					if len(got) == 0 {
						return
					}
					mu.Lock()
					for _, j := range got {
						if prev, ok := seen[j.ID]; ok {
							errs <- fmt.Errorf("job %s claimed by %s and %s", j.ID, prev, worker)
						}
						seen[j.ID] = worker
					}
					mu.Unlock()
				}
			}()
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if len(seen) != n {
		t.Fatalf("claimed %d distinct jobs, want %d", len(seen), n)
	}
}

func testFinishChecksClaim(t *testing.T, open Opener) {
	s := open(t)
	insert(t, s, job(t, "a", nil))
	j := claim(t, s, "w1", 1, t0)[0]
	stale := queue.RetryPolicy{}.Decide(j, "w2", succeeded(t0, ""), t0)
	applied, err := s.FinishJobs(ctx(t), []queue.Finish{stale})
	if err != nil || applied[0] {
		t.Fatalf("finish by another worker must be skipped: applied=%v err=%v", applied, err)
	}
	wrongAttempt := queue.RetryPolicy{}.Decide(j, "w1", succeeded(t0, ""), t0)
	wrongAttempt.Attempt = 7
	if applied, _ := s.FinishJobs(ctx(t), []queue.Finish{wrongAttempt}); applied[0] {
		t.Fatal("finish of another attempt must be skipped")
	}
	finish(t, s, j, "w1", succeeded(t0, "hi"), t0.Add(2*time.Second))
	got := get(t, s, "a")
	if got.State != queue.StateCompleted || got.ExitCode == nil || *got.ExitCode != 0 || got.FinishedAt.IsZero() || got.Error != "" {
		t.Fatalf("completed job: %+v", got)
	}
	if applied, _ := s.FinishJobs(ctx(t), []queue.Finish{queue.RetryPolicy{}.Decide(j, "w1", succeeded(t0, ""), t0)}); applied[0] {
		t.Fatal("a second finish of the same attempt must be skipped")
	}
}

func testRetryAndDead(t *testing.T, open Opener) {
	s := open(t)
	insert(t, s, job(t, "a", func(n *queue.NewJob) { n.MaxRetries = ptr(2) }))
	now := t0
	for attempt := 1; attempt <= 3; attempt++ {
		got := claim(t, s, "w", 1, now)
		if len(got) != 1 || got[0].Attempts != attempt {
			t.Fatalf("attempt %d: claimed %+v", attempt, got)
		}
		f := finish(t, s, got[0], "w", failed(now), now)
		j := get(t, s, "a")
		if attempt < 3 {
			wantRun := now.Add(time.Duration(1<<attempt) * time.Second) // 2s, 4s
			if j.State != queue.StateFailed || !j.RunAt.Equal(wantRun) || f.State != queue.StateFailed {
				t.Fatalf("attempt %d: state %s run_at %v, want failed at %v", attempt, j.State, j.RunAt, wantRun)
			}
			if c := claim(t, s, "w", 1, wantRun.Add(-time.Microsecond)); len(c) != 0 {
				t.Fatalf("attempt %d: claimed before its retry time", attempt)
			}
			now = wantRun
		} else if j.State != queue.StateDead || j.Error != "exit status 1" || j.Attempts != 3 {
			t.Fatalf("after last attempt: %+v", j)
		}
	}
	if c := claim(t, s, "w", 1, now.Add(24*time.Hour)); len(c) != 0 {
		t.Fatal("a dead job must not be claimed")
	}
}

func testRetryJobs(t *testing.T, open Opener) {
	s := open(t)
	insert(t, s, job(t, "dead", func(n *queue.NewJob) { n.MaxRetries = ptr(0) }), job(t, "done", nil))
	for _, j := range claim(t, s, "w", 2, t0) {
		if j.ID == "dead" {
			finish(t, s, j, "w", failed(t0), t0)
		} else {
			finish(t, s, j, "w", succeeded(t0, ""), t0)
		}
	}
	if _, err := s.RetryJobs(ctx(t), queue.RetryParams{IDs: []string{"dead", "done"}, Now: t0}); !errors.Is(err, queue.ErrConflict) {
		t.Fatalf("retrying a completed job: want ErrConflict, got %v", err)
	}
	if get(t, s, "dead").State != queue.StateDead {
		t.Fatal("a rejected retry must change nothing")
	}
	if _, err := s.RetryJobs(ctx(t), queue.RetryParams{IDs: []string{"missing"}, Now: t0}); !errors.Is(err, queue.ErrNotFound) {
		t.Fatalf("unknown id: want ErrNotFound, got %v", err)
	}
	moved, err := s.RetryJobs(ctx(t), queue.RetryParams{AllDead: true, Now: t0.Add(time.Minute)})
	if err != nil || !equal(moved, []string{"dead"}) {
		t.Fatalf("retry all dead: %v %v", moved, err)
	}
	j := get(t, s, "dead")
	if j.State != queue.StatePending || j.Attempts != 0 || !j.RunAt.Equal(t0.Add(time.Minute)) {
		t.Fatalf("retried job: %+v", j)
	}
}

func testLeaseRescue(t *testing.T, open Opener) {
	s := open(t)
	insert(t, s, job(t, "a", nil))
	j := claim(t, s, "gone-worker", 1, t0)[0] // lease until t0+30s
	p := queue.RescueParams{Now: t0.Add(29 * time.Second), Host: "other-host"}
	if c, err := s.RescueCandidates(ctx(t), p); err != nil || len(c) != 0 {
		t.Fatalf("lease still valid: candidates %v err %v", ids(c), err)
	}
	p.Now = t0.Add(31 * time.Second)
	c, err := s.RescueCandidates(ctx(t), p)
	if err != nil || !equal(ids(c), []string{"a"}) {
		t.Fatalf("expired lease: candidates %v err %v", ids(c), err)
	}
	f := finish(t, s, c[0], j.Worker, queue.End{Outcome: queue.OutcomeLost, Error: "worker lost", Started: t0, Finished: p.Now}, p.Now)
	if f.State != queue.StateFailed {
		t.Fatalf("a lost attempt with retries left goes to failed, got %s", f.State)
	}
	got := get(t, s, "a")
	hist, _ := s.Attempts(ctx(t), "a")
	if got.State != queue.StateFailed || len(hist) != 1 || hist[0].Outcome != queue.OutcomeLost {
		t.Fatalf("rescued job %+v history %+v", got, hist)
	}
}

func testHeartbeat(t *testing.T, open Opener) {
	s := open(t)
	w := &queue.WorkerInfo{ID: "w", PID: 1, Host: "h", StartedAt: t0, HeartbeatAt: t0}
	if err := s.RegisterWorker(ctx(t), w); err != nil {
		t.Fatal(err)
	}
	insert(t, s, job(t, "a", nil), job(t, "b", nil))
	claim(t, s, "w", 2, t0)
	if _, err := s.CancelJob(ctx(t), "b", t0); err != nil {
		t.Fatal(err)
	}
	res, err := s.Heartbeat(ctx(t), queue.HeartbeatParams{Worker: "w", Jobs: []string{"a", "b", "ghost"}, Now: t0.Add(20 * time.Second), LeaseUntil: t0.Add(50 * time.Second)})
	if err != nil {
		t.Fatal(err)
	}
	if !equal(res.Lost, []string{"ghost"}) || !equal(res.Cancel, []string{"b"}) || res.StopRequested {
		t.Fatalf("heartbeat result: %+v", res)
	}
	if got := get(t, s, "a"); !got.LeaseUntil.Equal(t0.Add(50 * time.Second)) {
		t.Fatalf("lease not renewed: %v", got.LeaseUntil)
	}
	if err := s.RequestStop(ctx(t), nil); err != nil {
		t.Fatal(err)
	}
	if res, _ := s.Heartbeat(ctx(t), queue.HeartbeatParams{Worker: "w", Now: t0, LeaseUntil: t0}); !res.StopRequested {
		t.Fatal("stop request not reported")
	}
	if _, err := s.Heartbeat(ctx(t), queue.HeartbeatParams{Worker: "unknown", Now: t0}); !errors.Is(err, queue.ErrNotFound) {
		t.Fatalf("heartbeat of unregistered worker: want ErrNotFound, got %v", err)
	}
}

func testCancel(t *testing.T, open Opener) {
	s := open(t)
	insert(t, s, job(t, "p", nil), job(t, "run", func(n *queue.NewJob) { n.Priority = 9 }))
	claim(t, s, "w", 1, t0)
	if was, err := s.CancelJob(ctx(t), "p", t0); err != nil || was != queue.StatePending {
		t.Fatalf("cancel pending: %v %v", was, err)
	}
	if get(t, s, "p").State != queue.StateCancelled {
		t.Fatal("pending job not cancelled")
	}
	if was, err := s.CancelJob(ctx(t), "run", t0); err != nil || was != queue.StateProcessing {
		t.Fatalf("cancel processing: %v %v", was, err)
	}
	if j := get(t, s, "run"); j.State != queue.StateProcessing || !j.CancelRequested {
		t.Fatalf("processing job must keep running with a cancel request: %+v", j)
	}
	if _, err := s.CancelJob(ctx(t), "p", t0); !errors.Is(err, queue.ErrConflict) {
		t.Fatalf("cancel cancelled: want ErrConflict, got %v", err)
	}
	if _, err := s.CancelJob(ctx(t), "zzz", t0); !errors.Is(err, queue.ErrNotFound) {
		t.Fatalf("cancel unknown: want ErrNotFound, got %v", err)
	}
}

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
	stats, err := s.AttemptStats(ctx(t), t0.Add(-time.Hour))
	if err != nil || len(stats) != 2 || stats[1].Queue != "default" || stats[1].Duration != 1500*time.Millisecond {
		t.Fatalf("stats: %+v %v", stats, err)
	}
}

func testDelete(t *testing.T, open Opener) {
	s := open(t)
	insert(t, s, job(t, "old", nil), job(t, "keep-pending", nil))
	j := claim(t, s, "w", 1, t0)[0]
	finish(t, s, j, "w", succeeded(t0, "x"), t0)
	if n, err := s.DeleteJobs(ctx(t), queue.DeleteParams{Before: t0}); err != nil || n != 0 {
		t.Fatalf("nothing is older than t0: %d %v", n, err)
	}
	if _, err := s.DeleteJobs(ctx(t), queue.DeleteParams{Before: t0.Add(time.Hour), States: []queue.State{queue.StatePending}}); !errors.Is(err, queue.ErrInvalid) {
		t.Fatalf("deleting pending jobs must be refused: %v", err)
	}
	n, err := s.DeleteJobs(ctx(t), queue.DeleteParams{Before: t0.Add(time.Hour)})
	if err != nil || n != 1 {
		t.Fatalf("delete: %d %v", n, err)
	}
	if _, err := s.GetJob(ctx(t), j.ID); !errors.Is(err, queue.ErrNotFound) {
		t.Fatal("deleted job still there")
	}
	if h, _ := s.Attempts(ctx(t), j.ID); len(h) != 0 {
		t.Fatal("history of a deleted job must go too")
	}
	get(t, s, "keep-pending")
}

func testConfig(t *testing.T, open Opener) {
	s := open(t)
	if kv, err := s.GetConfig(ctx(t)); err != nil || len(kv) != 0 {
		t.Fatalf("empty config: %v %v", kv, err)
	}
	if err := s.SetConfig(ctx(t), "max-retries", "5"); err != nil {
		t.Fatal(err)
	}
	if err := s.SetConfig(ctx(t), "max-retries", "6"); err != nil {
		t.Fatal(err)
	}
	kv, err := open(t).GetConfig(ctx(t))
	if err != nil || kv["max-retries"] != "6" || len(kv) != 1 {
		t.Fatalf("config: %v %v", kv, err)
	}
}

func testWorkers(t *testing.T, open Opener) {
	s := open(t)
	w := &queue.WorkerInfo{ID: "w1", PID: 42, Host: "h", BootID: "b", ProcStart: 7, Queues: []string{"a", "b"}, StartedAt: t0, HeartbeatAt: t0}
	if err := s.RegisterWorker(ctx(t), w); err != nil {
		t.Fatal(err)
	}
	insert(t, s, job(t, "x", nil))
	claim(t, s, "w1", 1, t0)
	ws, err := s.ListWorkers(ctx(t))
	if err != nil || len(ws) != 1 {
		t.Fatalf("list workers: %v %v", ws, err)
	}
	g := ws[0]
	if g.PID != 42 || g.Host != "h" || g.BootID != "b" || g.ProcStart != 7 || !equal(g.Queues, []string{"a", "b"}) || !equal(g.CurrentJobs, []string{"x"}) {
		t.Fatalf("worker: %+v", g)
	}
	if err := s.UnregisterWorker(ctx(t), "w1"); err != nil {
		t.Fatal(err)
	}
	if ws, _ := s.ListWorkers(ctx(t)); len(ws) != 0 {
		t.Fatal("worker still registered")
	}
}

func testWakeups(t *testing.T, open Opener) {
	watcher, writer := open(t), open(t)
	c, cancel := context.WithCancel(ctx(t))
	defer cancel()
	wake, err := watcher.Wakeups(c)
	if err != nil {
		t.Fatal(err)
	}
	insert(t, writer, job(t, "a", nil))
	select {
	case <-wake:
	case <-time.After(10 * time.Second):
		t.Fatal("no wake-up after an insert by another handle")
	}
	cancel()
	for range wake { // closed when ctx ends
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

func testCancelWinsOverRetry(t *testing.T, open Opener) {
	s := open(t)
	insert(t, s, job(t, "c", nil))
	j := claim(t, s, "w", 1, t0)[0]
	if _, err := s.CancelJob(ctx(t), "c", t0); err != nil {
		t.Fatal(err)
	}
	// The attempt fails before the worker sees the request: the job must not
	// be retried.
	finish(t, s, j, "w", failed(t0), t0)
	if got := get(t, s, "c"); got.State != queue.StateCancelled || got.CancelRequested {
		t.Fatalf("a cancelled job that failed: state %s cancel_requested %v, want cancelled", got.State, got.CancelRequested)
	}
}

func testExpiredLeaseIsNotRenewed(t *testing.T, open Opener) {
	s := open(t)
	if err := s.RegisterWorker(ctx(t), &queue.WorkerInfo{ID: "slow", Host: "h", StartedAt: t0, HeartbeatAt: t0}); err != nil {
		t.Fatal(err)
	}
	insert(t, s, job(t, "a", nil), job(t, "b", nil))
	claim(t, s, "slow", 2, t0) // leases until t0+30s
	late := t0.Add(31 * time.Second)
	res, err := s.Heartbeat(ctx(t), queue.HeartbeatParams{Worker: "slow", Jobs: []string{"a", "b"}, Now: late, LeaseUntil: late.Add(30 * time.Second)})
	if err != nil || len(res.Lost) != 2 {
		t.Fatalf("heartbeat after expiry: %+v %v, want both lost", res, err)
	}
	// A rescue that requires an expired lease loses to a renewal.
	insert(t, s, job(t, "r", nil))
	r := claim(t, s, "slow", 1, t0)[0]
	if _, err := s.Heartbeat(ctx(t), queue.HeartbeatParams{Worker: "slow", Jobs: []string{"r"}, Now: t0.Add(10 * time.Second), LeaseUntil: t0.Add(60 * time.Second)}); err != nil {
		t.Fatal(err)
	}
	f := queue.RetryPolicy{}.Decide(r, "slow", queue.End{Outcome: queue.OutcomeLost, Started: t0, Finished: t0}, t0.Add(40*time.Second))
	f.LeaseExpiredBy = t0.Add(40 * time.Second)
	if applied, err := s.FinishJobs(ctx(t), []queue.Finish{f}); err != nil || applied[0] {
		t.Fatalf("rescue of a renewed lease: applied %v err %v, want skipped", applied, err)
	}
}
