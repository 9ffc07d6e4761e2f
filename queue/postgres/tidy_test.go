package postgres_test

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/queuectl/queuectl/queue"
)

// makeDeadVersions runs n jobs through claim and finish on st, which
// leaves two dead versions of each in jobs.
func makeDeadVersions(t *testing.T, st queue.Store, prefix string, n int) {
	t.Helper()
	ctx := tctx(t)
	jobs := make([]*queue.Job, n)
	for i := range jobs {
		jobs[i] = newJob(t, fmt.Sprintf("%s%d", prefix, i))
	}
	if err := st.InsertJobs(ctx, jobs); err != nil {
		t.Fatal(err)
	}
	now := time.Now().UTC().Add(time.Second)
	claimed, err := st.ClaimJobs(ctx, queue.ClaimParams{Worker: "w", Limit: n, Now: now, LeaseUntil: now.Add(time.Hour)})
	if err != nil || len(claimed) != n {
		t.Fatalf("claimed %d of %d: %v", len(claimed), n, err)
	}
	fs := make([]queue.Finish, n)
	code := 0
	for i, j := range claimed {
		fs[i] = queue.RetryPolicy{}.Decide(j, "w", queue.End{Outcome: queue.OutcomeSucceeded, ExitCode: &code, Started: now, Finished: now}, now)
	}
	if _, err := st.FinishJobs(ctx, fs); err != nil {
		t.Fatal(err)
	}
}

// TestTidy checks Tidy against the server's autovacuum setting. With
// autovacuum off, the workers' Tidy vacuums jobs once its dead versions
// pass the threshold (and the statistics show them: they reach the server
// within seconds), skips the round while another process holds the tidy
// lock, and gives the lock back. With autovacuum on, Tidy leaves the
// tables to it.
func TestTidy(t *testing.T) {
	schema, u := newSchema(t)
	st := open(t, u)
	c := adminConn(t)
	ctx := tctx(t)
	var autovacuum bool
	if err := c.QueryRow(ctx, `SELECT current_setting('autovacuum')::boolean`).Scan(&autovacuum); err != nil {
		t.Fatal(err)
	}
	t.Logf("server autovacuum: %v", autovacuum)
	makeDeadVersions(t, st, "d", 500)
	// Wait until the server's statistics count the dead versions.
	waitFor(t, "the statistics to show the dead versions", 30*time.Second, func() bool {
		var dead int
		if err := c.QueryRow(ctx, `SELECT n_dead_tup FROM pg_stat_user_tables WHERE schemaname = $1 AND relname = 'jobs'`,
			schema).Scan(&dead); err != nil {
			t.Fatal(err)
		}
		return dead >= 1000
	})
	if autovacuum {
		done, err := st.Tidy(ctx)
		if err != nil || len(done) != 0 {
			t.Fatalf("with autovacuum on, Tidy did %q (err %v), want nothing", done, err)
		}
		return
	}

	// Another process tidying: this one skips the round.
	if _, err := c.Exec(ctx, `SELECT pg_advisory_lock(hashtextextended('queuectl-tidy:' || $1, 0))`, schema); err != nil {
		t.Fatal(err)
	}
	done, err := st.Tidy(ctx)
	if err != nil || len(done) != 0 {
		t.Fatalf("while another process holds the tidy lock, Tidy did %q (err %v), want nothing", done, err)
	}
	if _, err := c.Exec(ctx, `SELECT pg_advisory_unlock(hashtextextended('queuectl-tidy:' || $1, 0))`, schema); err != nil {
		t.Fatal(err)
	}

	done, err = st.Tidy(ctx)
	if err != nil {
		t.Fatalf("tidy: %v", err)
	}
	t.Logf("tidy did %q", done)
	if !slices.Contains(done, "vacuum and analyze jobs") {
		t.Fatalf("tidy did %q, want it to vacuum and analyze jobs", done)
	}
	var vacuums, dead int
	if err := c.QueryRow(ctx, `SELECT vacuum_count, n_dead_tup FROM pg_stat_user_tables WHERE schemaname = $1 AND relname = 'jobs'`,
		schema).Scan(&vacuums, &dead); err != nil {
		t.Fatal(err)
	}
	if vacuums != 1 || dead != 0 {
		t.Errorf("after tidy, jobs was vacuumed %d times and has %d dead versions; want 1 and 0", vacuums, dead)
	}
	// The lock went with the round's connection.
	waitFor(t, "the tidy lock to be free", 10*time.Second, func() bool {
		var free bool
		if err := c.QueryRow(ctx, `SELECT pg_try_advisory_lock(hashtextextended('queuectl-tidy:' || $1, 0))`, schema).Scan(&free); err != nil {
			t.Fatal(err)
		}
		return free
	})
}
