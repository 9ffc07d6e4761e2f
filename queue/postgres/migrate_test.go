package postgres_test

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/queuectl/queuectl/queue"
)

// schemaAt brings a new schema to version v with the migration files as
// they are in the tree, the way an older binary left it, and returns a
// connection to it.
func schemaAt(t testing.TB, v int) (u string, c *pgx.Conn) {
	t.Helper()
	_, u = newSchema(t)
	files, err := filepath.Glob("migrations/*.sql")
	if err != nil || len(files) < v {
		t.Fatalf("migrations: %v %v", files, err)
	}
	sort.Strings(files)
	c = connect(t, u)
	mustExec(t, c, `CREATE TABLE schema_version (version integer PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())`)
	for i, f := range files[:v] {
		body, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		mustExec(t, c, string(body))
		mustExec(t, c, `INSERT INTO schema_version (version) VALUES ($1)`, i+1)
	}
	return u, c
}

func mustExec(t testing.TB, c *pgx.Conn, sql string, args ...any) {
	t.Helper()
	if _, err := c.Exec(tctx(t), sql, args...); err != nil {
		t.Fatalf("%.60s: %v", sql, err)
	}
}

// Migrations 8 and 9 count finished attempts per statement and start
// delays per claim: a database of version 7 with jobs and counted
// attempts in it keeps its totals and adds to them, and a claim is
// counted once (by the claim, no longer by a trigger as well).
func TestMigrationsKeepMetrics(t *testing.T) {
	u, c := schemaAt(t, 7)
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	mustExec(t, c, `INSERT INTO jobs (id, queue, command, state, max_retries, backoff_base, max_backoff_us, run_at,
		created_at, updated_at) VALUES ('old', 'q', 'true', 'completed', 3, 2, 1000000, $1, $1, $1),
		('new', 'q', 'true', 'pending', 3, 2, 1000000, $1, $1, $1)`, t0)
	mustExec(t, c, `INSERT INTO attempts (job_id, number, started_at, finished_at, outcome)
		VALUES ('old', 1, $1, $2, 'succeeded')`, t0, t0.Add(time.Second))

	s := open(t, u)
	ctx := tctx(t)
	claimed, err := s.ClaimJobs(ctx, queue.ClaimParams{Worker: "w", Limit: 1, Now: t0.Add(time.Minute), LeaseUntil: t0.Add(time.Hour)})
	if err != nil || len(claimed) != 1 {
		t.Fatalf("claim after the migration: %d jobs, %v", len(claimed), err)
	}
	code := 0
	start := t0.Add(time.Minute)
	end := queue.End{Outcome: queue.OutcomeSucceeded, ExitCode: &code, Started: start, Finished: start.Add(time.Second)}
	if _, err := s.FinishJobs(ctx, []queue.Finish{queue.RetryPolicy{}.Decide(claimed[0], "w", end, start)}); err != nil {
		t.Fatal(err)
	}
	m, err := s.Metrics(ctx, start)
	if err != nil {
		t.Fatal(err)
	}
	if len(m.RunTimes) != 1 {
		t.Fatalf("run time totals %+v, want one bucket", m.RunTimes)
	}
	if rt := m.RunTimes[0]; rt.Queue != "q" || rt.N != 2 || rt.Sum != 2*time.Second || rt.LE != time.Second {
		t.Fatalf("run time total %+v, want q: 2 attempts, 2s, in the 1s bucket", rt)
	}
	if len(m.StartDelays) != 1 || m.StartDelays[0].N != 1 || m.StartDelays[0].Sum != time.Minute {
		t.Fatalf("start delay totals %+v, want one claim, a minute after its run_at", m.StartDelays)
	}
	old, err := s.GetJob(ctx, "old")
	if err != nil || old.State != queue.StateCompleted {
		t.Fatalf("the job stored before the migration: %+v %v", old, err)
	}
}

// Migration 11 counts the jobs a schema already holds; from then on the
// triggers follow every statement.
func TestMigrationCountsJobs(t *testing.T) {
	u, c := schemaAt(t, 10)
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for i, st := range []string{"pending", "pending", "failed", "processing", "completed", "waiting"} {
		mustExec(t, c, `INSERT INTO jobs (id, queue, command, state, max_retries, backoff_base, max_backoff_us, run_at,
			created_at, updated_at) VALUES ($1, $2, 'true', $3, 3, 2, 1000000, $4, $4, $4)`,
			fmt.Sprint("j", i), []string{"a", "b"}[i%2], st, t0)
	}
	s := open(t, u)
	counts, err := s.CountJobs(tctx(t))
	if err != nil {
		t.Fatal(err)
	}
	got := fmt.Sprint(counts)
	if want := "[{a completed 1} {a failed 1} {a pending 1} {b pending 1} {b processing 1} {b waiting 1}]"; got != want {
		t.Fatalf("counts after the migration:\n got %s\nwant %s", got, want)
	}
	if _, err := s.DiscardJobs(tctx(t), queue.DiscardParams{IDs: []string{"j0", "j5"}}); err != nil {
		t.Fatal(err)
	}
	if counts, err = s.CountJobs(tctx(t)); err != nil || fmt.Sprint(counts) != "[{a completed 1} {a failed 1} {b pending 1} {b processing 1}]" {
		t.Fatalf("counts after a discard: %v %v", counts, err)
	}
}
