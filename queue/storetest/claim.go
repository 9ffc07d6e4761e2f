package storetest

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/queuectl/queuectl/queue"
)

func testClaimOrder(t *testing.T, open Opener) {
	s := open(t)
	insert(t, s,
		job(t, "low-old", func(n *queue.NewJob) { n.Priority = 0 }),
		job(t, "high", func(n *queue.NewJob) { n.Priority = 10 }),
		job(t, "low-later-run", func(n *queue.NewJob) { n.Priority = 0; n.RunAt = t0.Add(time.Second) }),
		job(t, "mid", func(n *queue.NewJob) { n.Priority = 5 }),
	)
	now := t0.Add(time.Minute)
	before := storeNow(t, s)
	got := ids(claim(t, s, "w", 3, now))
	if want := []string{"high", "mid", "low-old"}; !equal(got, want) {
		t.Fatalf("claim order: got %v, want %v", got, want)
	}
	j := get(t, s, "high")
	if j.State != queue.StateProcessing || j.Attempts != 1 || j.Worker != "w" || !j.StartedAt.Equal(now) {
		t.Fatalf("claimed job: %+v", j)
	}
	checkLease(t, s, j.LeaseUntil, now, before, 30*time.Second)
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
