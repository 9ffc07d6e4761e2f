package storetest

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/queuectl/queuectl/queue"
)

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

// testRetryKeyTaken checks that a retry that would give a unique key a
// second unfinished job is refused as a conflict naming the job, the key
// and the other job, on every store alike, and changes nothing.
func testRetryKeyTaken(t *testing.T, open Opener) {
	s := open(t)
	for _, id := range []string{"old", "twin"} {
		insert(t, s, job(t, id, func(n *queue.NewJob) { n.MaxRetries = ptr(0); n.Queue = id; n.UniqueKey = "k" }))
		finish(t, s, claim(t, s, "w", 1, t0, id)[0], "w", failed(t0), t0)
	}
	// Two dead jobs with one key: retrying both would leave two unfinished.
	_, err := s.RetryJobs(ctx(t), queue.RetryParams{IDs: []string{"old", "twin"}, Now: t0})
	if !errors.Is(err, queue.ErrConflict) || !strings.Contains(err.Error(), `"old"`) || !strings.Contains(err.Error(), `"twin"`) ||
		!strings.Contains(err.Error(), `unique key "k"`) {
		t.Fatalf("retrying two dead jobs of one key: want ErrConflict naming both and the key, got %v", err)
	}
	if _, err := s.RetryJobs(ctx(t), queue.RetryParams{AllDead: true, Now: t0}); !errors.Is(err, queue.ErrConflict) {
		t.Fatalf("retrying every dead job: want ErrConflict, got %v", err)
	}
	if get(t, s, "old").State != queue.StateDead || get(t, s, "twin").State != queue.StateDead {
		t.Fatal("a refused retry changed a job")
	}
	// A new job takes the key: retrying a dead one names it.
	insert(t, s, job(t, "new", func(n *queue.NewJob) { n.UniqueKey = "k" }))
	_, err = s.RetryJobs(ctx(t), queue.RetryParams{IDs: []string{"twin"}, Now: t0})
	if !errors.Is(err, queue.ErrConflict) || !strings.Contains(err.Error(), `job "twin" is dead`) ||
		!strings.Contains(err.Error(), `unique key "k" is held by job "new"`) {
		t.Fatalf("retrying a dead job whose key a job holds: want ErrConflict naming the holder, got %v", err)
	}
	if get(t, s, "twin").State != queue.StateDead {
		t.Fatal("a refused retry changed the job")
	}
}
