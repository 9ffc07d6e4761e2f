package storetest

import (
	"errors"
	"testing"
	"time"

	"github.com/queuectl/queuectl/queue"
)

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
