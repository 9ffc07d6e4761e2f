package storetest

import (
	"errors"
	"testing"
	"time"

	"github.com/queuectl/queuectl/queue"
)

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
	if g.PID != 42 || g.Host != "h" || g.BootID != "b" || g.ProcStart != 7 || !equal(g.Queues, []string{"a", "b"}) || !equal(g.CurrentJobs, []string{"x"}) || g.Service {
		t.Fatalf("worker: %+v", g)
	}
	// A service is told apart from a worker (worker stop leaves it alone).
	svc := &queue.WorkerInfo{ID: "s1", PID: 43, Host: "h", BootID: "b", Service: true, StartedAt: t0.Add(time.Second), HeartbeatAt: t0}
	if err := s.RegisterWorker(ctx(t), svc); err != nil {
		t.Fatal(err)
	}
	if ws, _ := s.ListWorkers(ctx(t)); len(ws) != 2 || ws[0].Service || !ws[1].Service {
		t.Fatalf("worker then service: %+v", ws)
	}
	for _, id := range []string{"w1", "s1"} {
		if err := s.UnregisterWorker(ctx(t), id); err != nil {
			t.Fatal(err)
		}
	}
	if ws, _ := s.ListWorkers(ctx(t)); len(ws) != 0 {
		t.Fatal("worker still registered")
	}
}
