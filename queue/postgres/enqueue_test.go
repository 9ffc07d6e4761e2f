package postgres_test

import (
	"errors"
	"testing"
	"time"

	"github.com/queuectl/queuectl/queue"
)

// Two transactions that take the same unique keys in opposite orders
// deadlock, and the server rolls one back. When the one rolled back is an
// InsertJobs, it is made again once the other has gone ahead: the call
// succeeds, as if it had come after the other, and its jobs name the
// other's as their keys' holders.
func TestInsertJobsMadeAgainAfterADeadlock(t *testing.T) {
	schema, u := newSchema(t)
	t.Cleanup(func() { checkJobTotals(t, schema) })
	s := open(t, u)
	ctx := tctx(t)
	if err := s.InsertJobs(ctx, []*queue.Job{keyed(t, "h1", "", ""), keyed(t, "h2", "", "")}); err != nil {
		t.Fatal(err)
	}
	other, err := adminConn(t).Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Rollback(ctx)
	// The other transaction waits long before it looks for a deadlock:
	// the batch, whose check comes first, is the one rolled back.
	if _, err := other.Exec(ctx, `SET LOCAL deadlock_timeout = '60s'`); err != nil {
		t.Fatal(err)
	}
	if _, err := other.Exec(ctx, `UPDATE `+schema+`.jobs SET unique_key = 'k2' WHERE id = 'h2'`); err != nil {
		t.Fatal(err)
	}
	mine := []*queue.Job{keyed(t, "m1", "k1", ""), keyed(t, "m2", "k2", "")}
	done := make(chan error, 1)
	go func() { done <- s.InsertJobs(ctx, mine) }()
	watch := adminConn(t)
	waitFor(t, "the batch to wait for k2", 30*time.Second, func() bool {
		var n int
		err := watch.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity
			WHERE application_name = $1 AND wait_event_type = 'Lock'`, schema).Scan(&n)
		return err == nil && n > 0
	})
	// k1, which the batch holds: a deadlock, which the batch finds once
	// it has waited for deadlock_timeout (1 s by default), well after this.
	if _, err := other.Exec(ctx, `UPDATE `+schema+`.jobs SET unique_key = 'k1' WHERE id = 'h1'`); err != nil {
		t.Fatalf("the other transaction: %v", err)
	}
	if err := other.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatalf("InsertJobs: %v; want it made again after the deadlock", err)
	}
	if mine[0].ExistingID != "h1" || mine[1].ExistingID != "h2" {
		t.Fatalf("holders named %q, %q; want h1, h2", mine[0].ExistingID, mine[1].ExistingID)
	}
	for _, id := range []string{"m1", "m2"} {
		if _, err := s.GetJob(ctx, id); !errors.Is(err, queue.ErrNotFound) {
			t.Fatalf("job %s: %v; want it not added", id, err)
		}
	}
}
