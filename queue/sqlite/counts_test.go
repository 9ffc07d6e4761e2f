package sqlite_test

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/queuectl/queuectl/queue"
	"github.com/queuectl/queuectl/queue/sqlite"
)

// The counters are kept by the write transactions (counts.go). These tests
// hold them against two independent oracles: a full count of the jobs
// table, and the per-row triggers that kept the totals before migration 10,
// installed again into shadow tables of the test's database.

// oracle is the triggers of migration 3 that kept the totals, counting
// into check_ tables instead, and one that counts the final attempts kept
// on jobs' rows since migration 12 as the first counts attempts rows (a
// final attempt a retry moves to attempts is not counted again).
func oracle(t *testing.T) string {
	t.Helper()
	body, err := os.ReadFile("migrations/0003_metrics.sql")
	if err != nil {
		t.Fatal(err)
	}
	sql := `CREATE TABLE check_attempt_totals (queue TEXT, outcome TEXT, le_us INTEGER, n INTEGER, sum_us INTEGER,
		PRIMARY KEY (queue, outcome, le_us)) WITHOUT ROWID;
	CREATE TABLE check_start_delay_totals (queue TEXT, le_us INTEGER, n INTEGER, sum_us INTEGER,
		PRIMARY KEY (queue, le_us)) WITHOUT ROWID;`
	triggers := regexp.MustCompile(`(?s)CREATE TRIGGER (\w+)(.*?)\nEND;`).FindAllStringSubmatch(string(body), -1)
	if len(triggers) != 2 {
		t.Fatalf("migration 3 has %d triggers, want 2", len(triggers))
	}
	for _, m := range triggers {
		sql += "\nCREATE TRIGGER check_" + m[1] + strings.NewReplacer("INSERT INTO attempt_totals", "INSERT INTO check_attempt_totals",
			"INSERT INTO start_delay_totals", "INSERT INTO check_start_delay_totals",
			"AFTER INSERT ON attempts", "AFTER INSERT ON attempts\n    WHEN NOT EXISTS (SELECT 1 FROM jobs WHERE id = NEW.job_id AND last_outcome IS NOT NULL)",
		).Replace(m[2]) + "\nEND;"
	}
	return sql + `
	CREATE TRIGGER check_final_attempt_count AFTER UPDATE OF last_outcome ON jobs
		WHEN NEW.last_outcome IS NOT NULL AND OLD.last_outcome IS NULL
	BEGIN
		INSERT INTO check_attempt_totals (queue, outcome, le_us, n, sum_us)
		VALUES (NEW.queue, NEW.last_outcome,
			(SELECT min(le_us) FROM metric_buckets
				WHERE le_us >= NEW.finished_at - coalesce(NEW.last_started_at, NEW.finished_at)),
			1, NEW.finished_at - coalesce(NEW.last_started_at, NEW.finished_at))
		ON CONFLICT (queue, outcome, le_us) DO UPDATE SET n = n + 1, sum_us = sum_us + excluded.sum_us;
	END;`
}

// withOracle opens the database at path (migrating it) and installs the
// oracle; the test's end checks the counters against it.
func withOracle(t *testing.T, path string) {
	t.Helper()
	openAt(t, path).Close()
	raw, err := sqlite.OpenRaw(path)
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	if _, err := raw.Exec(oracle(t)); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { checkCounters(t, path) })
}

// slotsOracle counts the stored attempts into run-time histogram rows
// afresh, in SQL of its own.
const slotsOracle = `WITH a AS (
		SELECT a.finished_at AS f, j.queue, CASE WHEN a.outcome IN ('succeeded', 'interrupted') THEN a.outcome ELSE 'failed' END AS class,
			(SELECT min(le_us) FROM run_buckets WHERE le_us >= a.finished_at - coalesce(a.started_at, a.finished_at)) AS le
		FROM job_attempts a JOIN jobs j ON j.id = a.job_id)
	SELECT s.span, f - f % s.span AS slot, queue, class, le, count(*)
	FROM a, (SELECT 60000000 AS span UNION ALL SELECT 3600000000) s
	GROUP BY 1, 2, 3, 4, 5 ORDER BY 1, 2, 3, 4, 5`

// checkCounters compares the counters with a full count and the oracles.
func checkCounters(t *testing.T, path string) {
	t.Helper()
	raw, err := sqlite.OpenRaw(path)
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	for _, c := range []struct{ name, kept, want string }{
		{"job counts", `SELECT queue, state, n FROM job_counts WHERE n <> 0 ORDER BY 1, 2`,
			`SELECT queue, state, count(*) FROM jobs WHERE state <> 'staged' GROUP BY 1, 2 ORDER BY 1, 2`},
		{"attempt totals", `SELECT queue, outcome, le_us, n, sum_us FROM attempt_totals ORDER BY 1, 2, 3`,
			`SELECT queue, outcome, le_us, n, sum_us FROM check_attempt_totals ORDER BY 1, 2, 3`},
		{"start delay totals", `SELECT queue, le_us, n, sum_us FROM start_delay_totals ORDER BY 1, 2`,
			`SELECT queue, le_us, n, sum_us FROM check_start_delay_totals ORDER BY 1, 2`},
		{"run-time histograms", `SELECT span, slot, queue, class, le_us, n FROM run_slots ORDER BY 1, 2, 3, 4, 5`, slotsOracle},
	} {
		kept, want := rowsText(t, raw, c.kept), rowsText(t, raw, c.want)
		if !reflect.DeepEqual(kept, want) {
			t.Errorf("%s:\nkept  %v\nwant  %v", c.name, kept, want)
		}
	}
}

// rowsText is every row of query q, as text.
func rowsText(t *testing.T, db *sql.DB, q string) []string {
	t.Helper()
	rows, err := db.Query(q)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	cols, _ := rows.Columns()
	var out []string
	for rows.Next() {
		vals := make([]any, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			t.Fatal(err)
		}
		out = append(out, strings.TrimSpace(fmt.Sprintln(vals...)))
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestCountersFollowEveryWrite runs every kind of write from three handles
// (processes, to the database), several at once, and compares the counters
// with the full count and the oracle.
func TestCountersFollowEveryWrite(t *testing.T) {
	path := filepath.Join(t.TempDir(), "queue.db")
	withOracle(t, path)
	ctx := context.Background()
	stores := []queue.Store{openAt(t, path), openAt(t, path), openAt(t, path)}
	now := time.Now().UTC().Truncate(time.Microsecond)
	zero := 0
	enqueue := func(s queue.Store, jobs ...queue.NewJob) {
		t.Helper()
		if _, err := queue.Enqueue(ctx, s, nil, jobs, now); err != nil {
			t.Fatal(err)
		}
	}
	// Inserts: plain jobs in two queues, jobs with the optional columns, a
	// unique key twice, dependencies (waiting), a job due later.
	var plain []queue.NewJob
	for i := range 300 {
		plain = append(plain, queue.NewJob{ID: "p" + strconv.Itoa(i), Queue: []string{"a", "b"}[i%2], Command: "true",
			MaxRetries: &[]int{0, 1, 3}[i%3]})
	}
	enqueue(stores[0], plain...)
	enqueue(stores[1], queue.NewJob{ID: "env", Queue: "b", Command: "true", Env: map[string]string{"K": "v"}},
		queue.NewJob{ID: "u1", Queue: "a", Command: "true", UniqueKey: "k"},
		queue.NewJob{ID: "later", Queue: "c", Command: "true", RunAt: now.Add(time.Hour)})
	enqueue(stores[2], queue.NewJob{ID: "u2", Queue: "a", Command: "true", UniqueKey: "k"})
	enqueue(stores[0], queue.NewJob{ID: "root", Queue: "c", Command: "true"},
		queue.NewJob{ID: "child", Queue: "c", Command: "true", After: []string{"root"}},
		queue.NewJob{ID: "grandchild", Queue: "c", Command: "true", After: []string{"child"}},
		queue.NewJob{ID: "doomed", Queue: "c", Command: "true", After: []string{"root"}})
	// A bulk import committed, one aborted.
	for _, commit := range []bool{true, false} {
		imp, err := stores[1].BeginImport(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var jobs []*queue.Job
		for i := range 50 {
			j, err := queue.NewJob{ID: fmt.Sprintf("imp-%v-%d", commit, i), Queue: "d", Command: "true", MaxRetries: &zero}.
				Resolve(queue.DefaultSettings(), now)
			if err != nil {
				t.Fatal(err)
			}
			jobs = append(jobs, j)
		}
		if err := imp.Stage(ctx, jobs); err != nil {
			t.Fatal(err)
		}
		if commit {
			err = imp.Commit(ctx)
		} else {
			err = imp.Abort(ctx)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	// A limit on queue b, so that claims take the steered path too.
	one := 1000
	if err := stores[2].UpdateQueueControls(ctx, queue.ControlUpdate{Names: []string{"b"}, MaxRunning: &one}); err != nil {
		t.Fatal(err)
	}
	// Cancel a waiting job and a pending one.
	for _, id := range []string{"doomed", "p7"} {
		if _, err := stores[0].CancelJob(ctx, id, now); err != nil {
			t.Fatal(err)
		}
	}
	// Three workers claim and finish at once, with every outcome; some
	// claims are left unfinished (their lease runs out, for the rescue).
	var wg sync.WaitGroup
	errs := make(chan error, len(stores))
	for w, s := range stores {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs <- work(ctx, s, "w"+strconv.Itoa(w), now)
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	// Cancel a running job (a request) and a pending one.
	rows, err := stores[0].ListJobs(ctx, queue.ListParams{States: []queue.State{queue.StateProcessing}})
	if err != nil || len(rows) == 0 {
		t.Fatalf("processing jobs: %d, %v", len(rows), err)
	}
	if _, err := stores[0].CancelJob(ctx, rows[0].ID, now); err != nil {
		t.Fatal(err)
	}
	// Rescue: the unfinished claims' leases ran out; finishes as lost.
	cands, err := stores[1].RescueCandidates(ctx, queue.RescueParams{Now: now.Add(time.Hour)})
	if err != nil || len(cands) == 0 {
		t.Fatalf("rescue candidates: %d, %v", len(cands), err)
	}
	var fs []queue.Finish
	for _, j := range cands {
		f := queue.RetryPolicy{}.Decide(j, j.Worker, queue.End{Outcome: queue.OutcomeLost, Started: j.StartedAt, Finished: now.Add(time.Hour)}, now.Add(time.Hour))
		f.LeaseExpiredBy = now.Add(time.Hour)
		fs = append(fs, f)
	}
	if _, err := stores[1].FinishJobs(ctx, fs); err != nil {
		t.Fatal(err)
	}
	// Retry dead jobs of queue a, and one by id; discard some dead ones.
	if _, err := stores[2].RetryJobs(ctx, queue.RetryParams{AllDead: true, Queue: "a", Now: now}); err != nil {
		t.Fatal(err)
	}
	dead, err := stores[2].ListJobs(ctx, queue.ListParams{States: []queue.State{queue.StateDead}})
	if err != nil || len(dead) < 2 {
		t.Fatalf("dead jobs: %d, %v", len(dead), err)
	}
	if _, err := stores[2].RetryJobs(ctx, queue.RetryParams{IDs: []string{dead[0].ID}, Now: now}); err != nil {
		t.Fatal(err)
	}
	if _, err := stores[0].DiscardJobs(ctx, queue.DiscardParams{IDs: []string{dead[1].ID}}); err != nil {
		t.Fatal(err)
	}
	// Retention: delete some finished jobs in small batches, then all.
	for _, limit := range []int{7, 0} {
		if _, err := stores[1].DeleteJobs(ctx, queue.DeleteParams{Before: now.Add(2 * time.Hour), States: []queue.State{queue.StateCompleted}, Limit: limit}); err != nil {
			t.Fatal(err)
		}
	}
	// A second round of work over what was retried.
	if err := work(ctx, stores[0], "w-last", now.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	counts, err := stores[0].CountJobs(ctx)
	if err != nil || len(counts) == 0 {
		t.Fatalf("count jobs: %v, %v", counts, err)
	}
}

// work claims and finishes jobs until none is due, in batches of 1 to 8,
// with an outcome that depends on the job: succeeded, failed, timed out,
// interrupted; every eleventh claim is left unfinished.
func work(ctx context.Context, s queue.Store, worker string, now time.Time) error {
	code := 1
	for round := 0; ; round++ {
		jobs, err := s.ClaimJobs(ctx, queue.ClaimParams{Worker: worker, Limit: 1 + round%8, Now: now, LeaseUntil: now.Add(time.Minute)})
		if err != nil || len(jobs) == 0 {
			return err
		}
		var fs []queue.Finish
		for i, j := range jobs {
			n, _ := strconv.Atoi(j.ID[1:])
			if (round+i)%11 == 10 {
				continue
			}
			e := queue.End{Outcome: queue.OutcomeSucceeded, Started: now.Add(-time.Duration(n) * time.Millisecond), Finished: now}
			switch n % 5 {
			case 1:
				e.Outcome, e.ExitCode = queue.OutcomeFailed, &code
			case 2:
				e.Outcome = queue.OutcomeTimedOut
			case 3:
				if j.Attempts == 1 {
					e.Outcome = queue.OutcomeInterrupted
				}
			}
			f := queue.RetryPolicy{}.Decide(j, worker, e, now)
			f.RunAt = now // a failed job is due again at once
			fs = append(fs, f)
		}
		if len(fs) > 0 {
			if _, err := s.FinishJobs(ctx, fs); err != nil {
				return err
			}
		}
	}
}

// A claim applies claimSet to the rows it read (claimed); what it returns
// must be what it stored, on the free path and the steered one.
func TestClaimedJobsAreTheStoredRows(t *testing.T) {
	s := openAt(t, filepath.Join(t.TempDir(), "queue.db"))
	ctx := context.Background()
	now := time.Now().UTC()
	if _, err := queue.Enqueue(ctx, s, nil, []queue.NewJob{
		{ID: "a", Command: "true", Env: map[string]string{"K": "v"}, Labels: map[string]string{"l": "x"}},
		{ID: "b", Queue: "limited", Command: "true", Priority: 3, Hooks: queue.Hooks{OnDead: "echo"}},
	}, now); err != nil {
		t.Fatal(err)
	}
	two := 2
	if err := s.UpdateQueueControls(ctx, queue.ControlUpdate{Names: []string{"limited"}, MaxRunning: &two}); err != nil {
		t.Fatal(err)
	}
	for _, queues := range [][]string{{"default"}, {"limited"}} {
		got, err := s.ClaimJobs(ctx, queue.ClaimParams{Worker: "w", Queues: queues, Limit: 4, Now: now.Add(time.Second), LeaseUntil: now.Add(time.Minute)})
		if err != nil || len(got) != 1 {
			t.Fatalf("claim %v: %d jobs, %v", queues, len(got), err)
		}
		stored, err := s.GetJob(ctx, got[0].ID)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got[0], stored) {
			t.Fatalf("claim %v returned\n%+v\nstored\n%+v", queues, got[0], stored)
		}
	}
}

// Migration 10 moves the totals the triggers kept into the counters and
// counts the jobs again, leaving staged ones out.
func TestMigrationKeepsTheCounts(t *testing.T) {
	path := filepath.Join(t.TempDir(), "queue.db")
	if err := sqlite.MigrateTo(path, 9); err != nil {
		t.Fatal(err)
	}
	raw, err := sqlite.OpenRaw(path)
	if err != nil {
		t.Fatal(err)
	}
	// The triggers of version 9 count these.
	for i, st := range []string{"pending", "pending", "failed", "processing", "completed", "staged"} {
		_, err := raw.Exec(`INSERT INTO jobs (id, queue, command, state, max_retries, backoff_base, max_backoff_us,
			run_at, created_at, updated_at) VALUES (?, ?, 'true', ?, 3, 2, 3600000000, 1000, 1000, 1000)`,
			"j"+strconv.Itoa(i), []string{"a", "b"}[i%2], st)
		if err != nil {
			t.Fatal(err)
		}
	}
	_, err = raw.Exec(`UPDATE jobs SET state = 'processing', started_at = 9000 WHERE id = 'j0';
		INSERT INTO attempts (job_id, number, started_at, finished_at, outcome) VALUES ('j4', 1, 1000, 31000, 'succeeded');
		UPDATE job_counts SET n = n + 5 WHERE state = 'failed'`) // a count gone wrong is counted again
	if err != nil {
		t.Fatal(err)
	}
	raw.Close()
	openAt(t, path).Close()
	raw, err = sqlite.OpenRaw(path)
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	for q, want := range map[string][]string{
		`SELECT queue, state, n FROM job_counts ORDER BY 1, 2`:        {"a completed 1", "a failed 1", "a processing 1", "b pending 1", "b processing 1"},
		`SELECT queue, outcome, le_us, n, sum_us FROM attempt_totals`: {"a succeeded 50000 1 30000"},
		`SELECT queue, le_us, n, sum_us FROM start_delay_totals`:      {"a 10000 1 8000"},
	} {
		if got := rowsText(t, raw, q); !reflect.DeepEqual(got, want) {
			t.Errorf("%s:\n got %v\nwant %v", q, got, want)
		}
	}
}
