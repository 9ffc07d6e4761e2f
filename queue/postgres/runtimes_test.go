package postgres_test

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/queuectl/queuectl/queue"
	"github.com/queuectl/queuectl/queue/postgres"
	"github.com/queuectl/queuectl/queue/storetest"
)

// The run-time buckets of migration 10 are queue.RunTimeBounds.
func TestRunBucketsAreTheGoBounds(t *testing.T) {
	schema, u := newSchema(t)
	open(t, u).Close()
	rows, err := adminConn(t).Query(tctx(t), `SELECT le_us FROM `+schema+`.run_buckets ORDER BY le_us`)
	if err != nil {
		t.Fatal(err)
	}
	got, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil {
		t.Fatal(err)
	}
	if want := queue.RunTimeBounds(); !reflect.DeepEqual(got, want) {
		t.Fatalf("run_buckets has %d bounds, queue.RunTimeBounds %d:\n%v\n%v", len(got), len(want), got, want)
	}
}

// Migration 10 counts the attempts a database already holds: an upgraded
// database shows what a new one that recorded the same attempts shows,
// and deleting the jobs empties the histograms again.
func TestMigrationBackfillsRunTimes(t *testing.T) {
	u, c := schemaAt(t, 9)
	sample := storetest.SampleAttempts(400)
	for _, a := range sample {
		mustExec(t, c, `INSERT INTO jobs (id, queue, command, state, attempts, max_retries, backoff_base, max_backoff_us,
			run_at, created_at, updated_at) VALUES ($1, $2, 'true', 'completed', 1, 0, 2, 3600000000, $3, $3, $3)`,
			a.JobID, a.Queue, a.FinishedAt)
		mustExec(t, c, `INSERT INTO attempts (job_id, number, started_at, finished_at, outcome) VALUES ($1, 1, $2, $3, $4)`,
			a.JobID, a.FinishedAt.Add(-a.Duration), a.FinishedAt, string(a.Outcome))
	}
	// Migration 9's trigger counted those into the monitoring totals.
	mustExec(t, c, `DELETE FROM attempt_totals`)
	s := open(t, u)
	t0 := sample[0].FinishedAt.Truncate(time.Hour)
	for _, since := range []time.Time{t0.Add(-time.Hour), t0.Add(50*time.Minute + 30*time.Second), t0.Add(2 * time.Hour)} {
		storetest.CheckRunTimes(t, s, since, sample, false)
	}
	if n, err := s.DeleteJobs(tctx(t), queue.DeleteParams{Before: t0.Add(24 * time.Hour), Limit: 150}); err != nil || n != 150 {
		t.Fatalf("delete a batch: %d %v", n, err)
	}
	if n, err := s.DeleteJobs(tctx(t), queue.DeleteParams{Before: t0.Add(24 * time.Hour)}); err != nil || n != len(sample)-150 {
		t.Fatalf("delete the rest: %d %v", n, err)
	}
	var n int
	if err := c.QueryRow(tctx(t), `SELECT count(*) FROM run_slots`).Scan(&n); err != nil || n != 0 {
		t.Fatalf("run_slots rows after deleting every job: %d %v", n, err)
	}
}

// TestStatsReadIndexRanges checks, on a table large enough for the
// planner to care, that the slowest attempts of a minute come from the end
// of its ranges of attempts_slowest and jobs_slowest (final attempts kept
// on the jobs' rows), merged with no sort and no sequential scan, and that
// the run-time sums read ranges of run_slots' key.
func TestStatsReadIndexRanges(t *testing.T) {
	conn := migratedConn(t)
	ctx := tctx(t)
	_, err := conn.Exec(ctx, `INSERT INTO jobs (id, queue, command, state, max_retries, backoff_base, max_backoff_us,
			run_at, created_at, updated_at)
		SELECT 'j' || i, 'q' || (i % 4), 'true', 'completed', 0, 2, 3600000000, t, t, t
		FROM generate_series(1, 50000) AS i, LATERAL (SELECT timestamptz '2026-03-01 12:00:00+00' + i * interval '2 s' AS t) t;
		INSERT INTO attempts (job_id, number, started_at, finished_at, outcome)
		SELECT id, 1, run_at - (hashtext(id) % 60000) * interval '1 ms', run_at, 'succeeded' FROM jobs WHERE seq % 2 = 0;
		UPDATE jobs SET attempts = 1, finished_at = run_at, last_started_at = run_at - (hashtext(id) % 60000) * interval '1 ms',
			last_outcome = 'succeeded' WHERE seq % 2 = 1`)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	if err := conn.QueryRow(ctx, `SELECT array_agg(id) FROM jobs`).Scan(&ids); err != nil {
		t.Fatal(err)
	}
	mustExec(t, conn, postgres.CountImportedSQL, ids) // as an import would
	mustExec(t, conn, `ANALYZE jobs; ANALYZE attempts; ANALYZE run_slots`)
	from := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	plan := explain(t, conn, "EXPLAIN "+postgres.LongestSQL, from, from.Add(time.Hour), int64(-1<<63), 5)
	t.Logf("longest:\n%s", plan)
	if !strings.Contains(plan, "Index Scan Backward using attempts_slowest on attempts") ||
		!strings.Contains(plan, "Index Scan Backward using jobs_slowest on jobs") || strings.Contains(plan, "Sort  (") ||
		strings.Contains(plan, "Seq Scan") {
		t.Errorf("longest: want backward scans of attempts_slowest and jobs_slowest per minute, merged, no sort; plan:\n%s", plan)
	}
	plan = explain(t, conn, "EXPLAIN "+postgres.RunTimesSQL, from, from.Add(time.Hour), int64(0))
	t.Logf("run times:\n%s", plan)
	if strings.Count(plan, "run_slots_pkey") != 2 || strings.Contains(plan, "Seq Scan on run_slots") {
		t.Errorf("run times: want two ranges of run_slots_pkey; plan:\n%s", plan)
	}
}

// ImportJobs counts the jobs and attempts it copies, as enqueueing and
// finishing them would have: in the job counts, the run-time histograms
// and the monitoring totals.
func TestImportCountsAttempts(t *testing.T) {
	schema, u := newSchema(t)
	s := open(t, u)
	sample := storetest.SampleAttempts(1200) // more than one import batch
	recs := make([]queue.JobRecord, len(sample))
	var sum time.Duration
	for i, a := range sample {
		recs[i] = queue.JobRecord{
			Job: &queue.Job{ID: a.JobID, Queue: a.Queue, Command: "true", State: queue.StateCompleted, Attempts: 1,
				BackoffBase: 2, MaxBackoff: time.Hour, RunAt: a.FinishedAt, CreatedAt: a.FinishedAt, UpdatedAt: a.FinishedAt},
			History: []*queue.Attempt{{JobID: a.JobID, Number: 1, StartedAt: a.FinishedAt.Add(-a.Duration),
				FinishedAt: a.FinishedAt, Outcome: a.Outcome}},
		}
		sum += a.Duration
	}
	if err := s.ImportJobs(tctx(t), recs); err != nil {
		t.Fatal(err)
	}
	checkJobTotals(t, schema)
	storetest.CheckRunTimes(t, s, sample[0].FinishedAt.Add(-time.Hour), sample, false)
	m, err := s.Metrics(tctx(t), time.Now())
	if err != nil {
		t.Fatal(err)
	}
	var n int64
	var got time.Duration
	for _, b := range m.RunTimes {
		n, got = n+b.N, got+b.Sum
	}
	if n != int64(len(sample)) || got != sum {
		t.Fatalf("monitoring totals: %d attempts, %v run time; want %d, %v", n, got, len(sample), sum)
	}
}
