package postgres_test

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/queuectl/queuectl/queue"
	"github.com/queuectl/queuectl/queue/postgres"
)

// Output pruning checks each row again as its update finds it: a prune
// that waited for another one (every service runs its own pruner) must
// neither count the output the other emptied nor lose the bytes it
// recorded as dropped. Here a transaction holds the job's row, the prune
// waits for it, and the transaction empties the output first.
func TestPruneOutputRechecksRows(t *testing.T) {
	schema, u := newSchema(t)
	s := open(t, u)
	ctx := tctx(t)
	now := time.Now().UTC()
	j := insertAndClaim(t, s, "w", now, "p")[0]
	code := 0
	end := queue.End{Outcome: queue.OutcomeSucceeded, ExitCode: &code, Started: now, Finished: now, Output: []byte("12345")}
	if _, err := s.FinishJobs(ctx, []queue.Finish{queue.RetryPolicy{}.Decide(j, "w", end, now)}); err != nil {
		t.Fatal(err)
	}
	tx, done := whileHeld(t, schema, u, "p", func() (int, error) {
		return s.PruneOutput(ctx, queue.PruneOutputParams{Before: now.Add(time.Hour)})
	})
	// What a concurrent prune would have done.
	if _, err := tx.Exec(ctx, `UPDATE jobs SET last_dropped = 5, last_output = NULL WHERE id = 'p'`); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	r := <-done
	if r.err != nil || r.n != 0 {
		t.Fatalf("prune after another emptied the output: %d %v, want 0", r.n, r.err)
	}
	hist, err := s.Attempts(ctx, "p")
	if err != nil || len(hist) != 1 || hist[0].Dropped != 5 {
		t.Fatalf("history: %+v %v, want one attempt with 5 bytes dropped", hist, err)
	}
}

// Output pruning and retention lock the jobs they change in id order, as
// retries and discards do (lockJobs), so that none of them deadlocks
// another. Jobs b and a ended in that order, so pruning and retention
// find b first; a transaction standing in for a retry of both holds a,
// lets the statement wait for it, then takes b. Had the statement locked b
// as it found it, the two would wait for each other and PostgreSQL would
// abort one of them.
func TestPruneAndRetentionLockJobsInIDOrder(t *testing.T) {
	for _, c := range []struct {
		name string
		run  func(ctx context.Context, s *postgres.Store, before time.Time) (int, error)
	}{
		{"prune output", func(ctx context.Context, s *postgres.Store, before time.Time) (int, error) {
			return s.PruneOutput(ctx, queue.PruneOutputParams{Before: before})
		}},
		{"retention", func(ctx context.Context, s *postgres.Store, before time.Time) (int, error) {
			return s.DeleteJobs(ctx, queue.DeleteParams{Before: before})
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			schema, u := newSchema(t)
			s := open(t, u)
			ctx := tctx(t)
			now := time.Now().UTC()
			endBThenA(t, s, now, queue.OutcomeSucceeded, queue.StateCompleted)
			tx, done := whileHeld(t, schema, u, "a", func() (int, error) { return c.run(ctx, s, now.Add(time.Hour)) })
			if _, err := tx.Exec(ctx, `SELECT 1 FROM jobs WHERE id = 'b' FOR UPDATE`); err != nil {
				t.Fatalf("lock job b while the statement waits for a: %v", err)
			}
			if err := tx.Commit(ctx); err != nil {
				t.Fatal(err)
			}
			if r := <-done; r.err != nil || r.n != 2 {
				t.Fatalf("%s: %d %v, want both jobs", c.name, r.n, r.err)
			}
		})
	}
}

// Pruning the output of attempts that led to retries (rows of attempts)
// locks them in key order, the order in which deleting their jobs takes
// them (jobs in id order, each job's attempts by the foreign key's
// cascade). As above: b's attempt ended first, a transaction holds a's
// and, once the prune waits for it, takes b's.
func TestPruneOutputLocksAttemptsInKeyOrder(t *testing.T) {
	schema, u := newSchema(t)
	s := open(t, u)
	ctx := tctx(t)
	now := time.Now().UTC()
	endBThenA(t, s, now, queue.OutcomeFailed, queue.StateFailed) // to be retried: the attempts stay in attempts
	tx, done := whileLocked(t, schema, u, `SELECT 1 FROM attempts WHERE job_id = $1 FOR UPDATE`, "a", func() (int, error) {
		return s.PruneOutput(ctx, queue.PruneOutputParams{Before: now.Add(time.Hour)})
	})
	if _, err := tx.Exec(ctx, `SELECT 1 FROM attempts WHERE job_id = 'b' FOR UPDATE`); err != nil {
		t.Fatalf("lock b's attempt while the prune waits for a's: %v", err)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if r := <-done; r.err != nil || r.n != 2 {
		t.Fatalf("prune: %d %v, want both attempts", r.n, r.err)
	}
}

// endBThenA inserts jobs b and a and ends an attempt of each, with output,
// b's a second before a's, leaving each in state want.
func endBThenA(t *testing.T, s *postgres.Store, now time.Time, outcome queue.Outcome, want queue.State) {
	t.Helper()
	code := 0
	for i, j := range insertAndClaim(t, s, "w", now, "b", "a") {
		at := now.Add(time.Duration(i) * time.Second)
		end := queue.End{Outcome: outcome, ExitCode: &code, Started: at, Finished: at, Output: []byte("out")}
		if outcome != queue.OutcomeSucceeded {
			code, end.Error = 1, "exit status 1"
		}
		f := queue.RetryPolicy{}.Decide(j, "w", end, at)
		if f.State != want {
			t.Fatalf("job %s after its attempt: %s, want %s", j.ID, f.State, want)
		}
		if _, err := s.FinishJobs(tctx(t), []queue.Finish{f}); err != nil {
			t.Fatal(err)
		}
	}
}

// result is what a statement run by whileHeld returned.
type result struct {
	n   int
	err error
}

// whileHeld begins a transaction that locks job id's row (failing a lock
// wait of its own after 10 s), starts run, which must come to wait for
// that row, and returns once it does: the transaction, and where run's
// result will come. The test's cleanup rolls the transaction back.
func whileHeld(t *testing.T, schema, u, id string, run func() (int, error)) (pgx.Tx, <-chan result) {
	t.Helper()
	return whileLocked(t, schema, u, `SELECT 1 FROM jobs WHERE id = $1 FOR UPDATE`, id, run)
}

// whileLocked is whileHeld with the rows lock (a statement of one
// parameter, id) locks.
func whileLocked(t *testing.T, schema, u, lock, id string, run func() (int, error)) (pgx.Tx, <-chan result) {
	t.Helper()
	ctx := tctx(t)
	tx, err := connect(t, u).Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tx.Rollback(context.Background()) })
	if _, err := tx.Exec(ctx, `SET LOCAL lock_timeout = '10s'`); err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, lock, id); err != nil {
		t.Fatal(err)
	}
	done := make(chan result, 1)
	go func() {
		n, err := run()
		done <- result{n, err}
	}()
	waitFor(t, "the statement waiting for job "+id+"'s row", 10*time.Second, func() bool {
		return adminQueryInt(t, `SELECT count(*) FROM pg_stat_activity WHERE application_name = $1 AND wait_event_type = 'Lock'`, schema) == 1
	})
	return tx, done
}
