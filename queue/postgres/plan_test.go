package postgres_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/queuectl/queuectl/queue"
	"github.com/queuectl/queuectl/queue/postgres"
)

// TestClaimUsesIndexInOrder checks, on a table large enough for the
// planner to care, that the claim walks a claim index in claim order (no
// sort of the runnable jobs, no sequential scan), both with the parameters
// at hand (custom plan) and for the generic plan a long-lived prepared
// statement may switch to.
func TestClaimUsesIndexInOrder(t *testing.T) {
	conn := migratedConn(t)
	ctx := tctx(t)
	_, err := conn.Exec(ctx, `INSERT INTO jobs (id, queue, command, state, priority, max_retries, backoff_base,
		max_backoff_us, run_at, created_at, updated_at)
		SELECT 'j' || i, 'q' || (i % 5), 'true',
			CASE WHEN i % 10 = 0 THEN 'pending' WHEN i % 10 = 1 THEN 'failed' ELSE 'completed' END,
			i % 3, 3, 2, 3600000000,
			timestamptz '2026-03-01 12:00:00+00' - (i % 1000) * interval '1 second',
			timestamptz '2026-03-01 11:00:00+00' + i * interval '1 millisecond',
			timestamptz '2026-03-01 12:00:00+00'
		FROM generate_series(1, 50000) AS i`)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, `ANALYZE jobs`); err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	for _, queues := range [][]string{nil, {"q1"}, {"q1", "q2"}} {
		p := queue.ClaimParams{Worker: "w", Queues: queues, Limit: 8, Now: now, LeaseUntil: now.Add(time.Minute)}
		wantIndex := "jobs_claim "
		if len(queues) == 1 {
			wantIndex = "jobs_claim_queue "
		}
		custom := explain(t, conn, "EXPLAIN "+postgres.ClaimSQL(queues, p.Limit), postgres.ClaimArgs(p)...)
		checkPlan(t, fmt.Sprintf("custom plan, queues %v", queues), custom, wantIndex)

		// A generic plan: prepared, parameters unknown at planning.
		name := fmt.Sprintf("claim_%d", len(queues))
		if _, err := conn.Exec(ctx, "PREPARE "+name+" AS "+postgres.ClaimSQL(queues, p.Limit)); err != nil {
			t.Fatal(err)
		}
		lits := []string{"'2026-03-01 12:00:00+00'", "'w'", "'2026-03-01 12:01:00+00'"}
		switch len(queues) {
		case 1:
			lits = append(lits, "'q1'")
		case 2:
			lits = append(lits, "'{q1,q2}'")
		}
		if _, err := conn.Exec(ctx, "SET plan_cache_mode = force_generic_plan"); err != nil {
			t.Fatal(err)
		}
		generic := explain(t, conn, "EXPLAIN EXECUTE "+name+"("+strings.Join(lits, ", ")+")")
		if _, err := conn.Exec(ctx, "RESET plan_cache_mode"); err != nil {
			t.Fatal(err)
		}
		checkPlan(t, fmt.Sprintf("generic plan, queues %v", queues), generic, wantIndex)
	}
}

// migratedConn returns a connection to a new schema that holds the
// current tables, closed when the test ends.
func migratedConn(t *testing.T) *pgx.Conn {
	t.Helper()
	_, u := newSchema(t)
	open(t, u).Close() // create the tables
	conn, err := pgx.Connect(tctx(t), u)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	return conn
}

func explain(t *testing.T, conn *pgx.Conn, sql string, args ...any) string {
	t.Helper()
	rows, err := conn.Query(tctx(t), sql, args...)
	if err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	lines, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	return strings.Join(lines, "\n")
}

func checkPlan(t *testing.T, what, plan, wantIndex string) {
	t.Helper()
	t.Logf("%s:\n%s", what, plan)
	if !strings.Contains(plan, "Index Scan using "+wantIndex+"on jobs") || !strings.Contains(plan, "LockRows") ||
		strings.Contains(plan, "Sort") || strings.Contains(plan, "Seq Scan") {
		t.Errorf("%s: want an ordered scan of %s with row locks, no sort, no sequential scan; plan:\n%s", what, strings.TrimSpace(wantIndex), plan)
	}
}

// TestRetentionUsesFinishedIndex checks that retention (DeleteJobs) finds
// the finished jobs past their time through jobs_finished_updated, an
// index of finished jobs only, with the parameters at hand and in a
// generic plan, on a table of mostly finished jobs, few of them older than
// the cutoff.
func TestRetentionUsesFinishedIndex(t *testing.T) {
	conn := migratedConn(t)
	ctx := tctx(t)
	_, err := conn.Exec(ctx, `INSERT INTO jobs (id, queue, command, state, max_retries, backoff_base,
		max_backoff_us, run_at, created_at, updated_at)
		SELECT 'j' || i, 'q', 'true', CASE WHEN i % 10 = 0 THEN 'pending' WHEN i % 10 = 1 THEN 'dead' ELSE 'completed' END,
			3, 2, 3600000000, t, t, t
		FROM generate_series(1, 50000) AS i, LATERAL (SELECT timestamptz '2026-03-01 00:00:00+00' + i * interval '1 second' AS t) t`)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, `ANALYZE jobs`); err != nil {
		t.Fatal(err)
	}
	before := time.Date(2026, 3, 1, 0, 10, 0, 0, time.UTC) // 1 % of the jobs are older
	query := "SELECT count(*) FROM (" + postgres.DeleteMatch + ") m"
	check := func(what, plan string) {
		t.Helper()
		t.Logf("%s:\n%s", what, plan)
		if !strings.Contains(plan, "jobs_finished_updated") || strings.Contains(plan, "Seq Scan") {
			t.Errorf("%s: want a scan of jobs_finished_updated, no sequential scan; plan:\n%s", what, plan)
		}
	}
	check("custom plan", explain(t, conn, "EXPLAIN "+query, before, []string{"completed", "dead", "cancelled"}))
	if _, err := conn.Exec(ctx, "PREPARE retention AS "+query); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, "SET plan_cache_mode = force_generic_plan"); err != nil {
		t.Fatal(err)
	}
	check("generic plan", explain(t, conn, `EXPLAIN EXECUTE retention('2026-03-01 00:10:00+00', '{completed}')`))
}
