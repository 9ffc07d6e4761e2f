package storetest

import (
	"errors"
	"testing"
	"time"

	"github.com/queuectl/queuectl/queue"
)

func testLeaseRescue(t *testing.T, open Opener) {
	s := open(t)
	insert(t, s, job(t, "a", nil))
	base := storeNow(t, s)
	j := claim(t, s, "gone-worker", 1, base)[0] // lease until base+30s (or a little later)
	p := queue.RescueParams{Now: base.Add(29 * time.Second), Host: "other-host"}
	if c, err := s.RescueCandidates(ctx(t), p); err != nil || len(c) != 0 {
		t.Fatalf("lease still valid: candidates %v err %v", ids(c), err)
	}
	p.Now = j.LeaseUntil.Add(time.Second)
	c, err := s.RescueCandidates(ctx(t), p)
	if err != nil || !equal(ids(c), []string{"a"}) {
		t.Fatalf("expired lease: candidates %v err %v", ids(c), err)
	}
	f := finish(t, s, c[0], j.Worker, queue.End{Outcome: queue.OutcomeLost, Error: "worker lost", Started: base, Finished: p.Now}, p.Now)
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
	base := storeNow(t, s)
	claim(t, s, "w", 2, base)
	if _, err := s.CancelJob(ctx(t), "b", t0); err != nil {
		t.Fatal(err)
	}
	before := storeNow(t, s)
	now := base.Add(20 * time.Second)
	res, err := s.Heartbeat(ctx(t), queue.HeartbeatParams{Worker: "w", Jobs: []string{"a", "b", "ghost"}, Now: now, LeaseUntil: now.Add(50 * time.Second)})
	if err != nil {
		t.Fatal(err)
	}
	if !equal(res.Lost, []string{"ghost"}) || !equal(res.Cancel, []string{"b"}) || res.StopRequested {
		t.Fatalf("heartbeat result: %+v", res)
	}
	checkLease(t, s, get(t, s, "a").LeaseUntil, now, before, 50*time.Second)
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

func testExpiredLeaseIsNotRenewed(t *testing.T, open Opener) {
	s := open(t)
	if err := s.RegisterWorker(ctx(t), &queue.WorkerInfo{ID: "slow", Host: "h", StartedAt: t0, HeartbeatAt: t0}); err != nil {
		t.Fatal(err)
	}
	insert(t, s, job(t, "a", nil), job(t, "b", nil))
	base := storeNow(t, s)
	// Short leases, so that a store on the database's clock sees them end.
	claimed, err := s.ClaimJobs(ctx(t), queue.ClaimParams{Worker: "slow", Limit: 2, Now: base, LeaseUntil: base.Add(10 * time.Millisecond)})
	if err != nil || len(claimed) != 2 {
		t.Fatalf("claim: %d jobs, %v", len(claimed), err)
	}
	late := storeTimeAfter(t, s, get(t, s, "a").LeaseUntil)
	res, err := s.Heartbeat(ctx(t), queue.HeartbeatParams{Worker: "slow", Jobs: []string{"a", "b"}, Now: late, LeaseUntil: late.Add(30 * time.Second)})
	if err != nil || len(res.Lost) != 2 {
		t.Fatalf("heartbeat after expiry: %+v %v, want both lost", res, err)
	}
	// A rescue that requires an expired lease loses to a renewal.
	insert(t, s, job(t, "r", nil))
	r := claim(t, s, "slow", 1, base)[0]
	if _, err := s.Heartbeat(ctx(t), queue.HeartbeatParams{Worker: "slow", Jobs: []string{"r"}, Now: base.Add(10 * time.Second), LeaseUntil: base.Add(60 * time.Second)}); err != nil {
		t.Fatal(err)
	}
	f := queue.RetryPolicy{}.Decide(r, "slow", queue.End{Outcome: queue.OutcomeLost, Started: base, Finished: base}, base.Add(40*time.Second))
	f.LeaseExpiredBy = base.Add(40 * time.Second)
	if applied, err := s.FinishJobs(ctx(t), []queue.Finish{f}); err != nil || applied[0] {
		t.Fatalf("rescue of a renewed lease: applied %v err %v, want skipped", applied, err)
	}
}
