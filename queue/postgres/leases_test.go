package postgres_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/queuectl/queuectl/queue"
)

// A heartbeat does not wait for a job's row that another transaction holds
// (a batch of finishes that locks its rows in another order would deadlock
// with it): it renews the rest, reports that job busy, neither renewed nor
// lost, and renews it at the next heartbeat.
func TestHeartbeatSkipsRowsOthersHold(t *testing.T) {
	_, u := newSchema(t)
	s := open(t, u)
	ctx := tctx(t)
	now := time.Now().UTC()
	if err := s.RegisterWorker(ctx, &queue.WorkerInfo{ID: "w", Host: "h", StartedAt: now}); err != nil {
		t.Fatal(err)
	}
	insertAndClaim(t, s, "w", now, "a", "b")
	tx, err := connect(t, u).Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, `SELECT 1 FROM jobs WHERE id = 'b' FOR UPDATE`); err != nil {
		t.Fatal(err)
	}
	lease := func(id string) time.Time {
		t.Helper()
		j, err := s.GetJob(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		return j.LeaseUntil
	}
	before := lease("b")
	beat := func() queue.HeartbeatResult {
		t.Helper()
		// Bounded: a heartbeat that waits for the row would wait for ever.
		hctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		res, err := s.Heartbeat(hctx, queue.HeartbeatParams{Worker: "w", Jobs: []string{"a", "b"}, Now: now, LeaseUntil: now.Add(2 * time.Hour)})
		if err != nil {
			t.Fatalf("heartbeat: %v", err)
		}
		return res
	}
	res := beat()
	if !slices.Equal(res.Busy, []string{"b"}) || len(res.Lost) != 0 || len(res.Cancel) != 0 {
		t.Fatalf("heartbeat while b's row is held: %+v, want b busy", res)
	}
	if got := lease("a"); got.Before(now.Add(90 * time.Minute)) {
		t.Errorf("a's lease not renewed: %v", got)
	}
	if got := lease("b"); !got.Equal(before) {
		t.Errorf("b's lease changed while its row was held: %v, was %v", got, before)
	}
	if err := tx.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	if res := beat(); len(res.Busy) != 0 || len(res.Lost) != 0 {
		t.Fatalf("heartbeat once the row is free: %+v", res)
	}
	if got := lease("b"); got.Before(now.Add(90 * time.Minute)) {
		t.Errorf("b's lease not renewed once its row was free: %v", got)
	}
}
