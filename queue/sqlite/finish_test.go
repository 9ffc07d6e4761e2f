package sqlite_test

import (
	"context"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/queuectl/queuectl/queue"
	"github.com/queuectl/queuectl/queue/sqlite"
)

// A job's final attempt is kept on its own row (migration 12): a job that
// ran once has no attempts row, one that failed first has a row for that
// attempt only, one whose attempt failed for good keeps it on the row too,
// and an attempt that printed nothing keeps no output. (What reads them
// back, through a retry too, is in the conformance suite.)
func TestFinalAttemptOnJobRow(t *testing.T) {
	path := filepath.Join(t.TempDir(), "queue.db")
	s := openAt(t, path)
	ctx := context.Background()
	now := time.Now().UTC()
	claimed := insertAndClaim(t, s, now, "once", "twice", "dead", "quiet")
	code, bad := 0, 1
	ok := queue.End{Outcome: queue.OutcomeSucceeded, ExitCode: &code, Started: now, Finished: now, Output: []byte("hi\n")}
	failed := queue.End{Outcome: queue.OutcomeFailed, ExitCode: &bad, Error: "exit status 1", Started: now, Finished: now}
	quiet := queue.End{Outcome: queue.OutcomeSucceeded, ExitCode: &code, Started: now, Finished: now}
	claimed[2].MaxRetries = 0
	policy := queue.RetryPolicy{}
	fs := []queue.Finish{policy.Decide(claimed[0], "w", ok, now), policy.Decide(claimed[1], "w", failed, now),
		policy.Decide(claimed[2], "w", failed, now), policy.Decide(claimed[3], "w", quiet, now)}
	if fs[1].State != queue.StateFailed || fs[2].State != queue.StateDead {
		t.Fatalf("decided %s and %s, want failed and dead", fs[1].State, fs[2].State)
	}
	if _, err := s.FinishJobs(ctx, fs); err != nil {
		t.Fatal(err)
	}
	later := now.Add(time.Hour)
	again, err := s.ClaimJobs(ctx, queue.ClaimParams{Worker: "w", Limit: 1, Now: later, LeaseUntil: later.Add(time.Hour)})
	if err != nil || len(again) != 1 || again[0].ID != "twice" {
		t.Fatalf("claim the retry: %v %v", again, err)
	}
	if _, err := s.FinishJobs(ctx, []queue.Finish{policy.Decide(again[0], "w", ok, later)}); err != nil {
		t.Fatal(err)
	}
	raw, err := sqlite.OpenRaw(path)
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	got := rowsText(t, raw, `SELECT id, (SELECT count(*) FROM attempts WHERE job_id = jobs.id), last_outcome,
		coalesce(length(last_output), 'none') FROM jobs ORDER BY id`)
	want := []string{"dead 0 failed none", "once 0 succeeded 3", "quiet 0 succeeded none", "twice 1 succeeded 3"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("jobs (id, attempts rows, final outcome on the row, output bytes):\n got %v\nwant %v", got, want)
	}
	out, err := s.Output(ctx, "once", 1)
	if err != nil || string(out.Output) != "hi\n" || out.Outcome != queue.OutcomeSucceeded || out.Number != 1 {
		t.Fatalf("output kept on the row: %+v %v", out, err)
	}
}

// A database of schema 11 keeps its attempts rows: after the migration a
// finished job's history reads as before, and its next retry's final
// attempt joins it on the row.
func TestAttemptsRecordedBeforeMigration12(t *testing.T) {
	path := filepath.Join(t.TempDir(), "queue.db")
	if err := sqlite.MigrateTo(path, 11); err != nil {
		t.Fatal(err)
	}
	raw, err := sqlite.OpenRaw(path)
	if err != nil {
		t.Fatal(err)
	}
	_, err = raw.Exec(`INSERT INTO jobs (id, queue, command, state, attempts, max_retries, backoff_base, max_backoff_us,
			run_at, created_at, updated_at, finished_at, error) VALUES ('old', 'default', 'false', 'dead', 1, 0, 2, 3600000000, 1, 1, 9, 9, 'exit status 1');
		INSERT INTO attempts (job_id, number, started_at, finished_at, exit_code, outcome, error, output)
		VALUES ('old', 1, 5, 9, 1, 'failed', 'exit status 1', 'before');`)
	raw.Close()
	if err != nil {
		t.Fatal(err)
	}
	s := openAt(t, path)
	ctx := context.Background()
	if _, err := s.RetryJobs(ctx, queue.RetryParams{IDs: []string{"old"}, Now: time.Now().UTC()}); err != nil {
		t.Fatal(err)
	}
	now := time.Now().UTC()
	claimed, err := s.ClaimJobs(ctx, queue.ClaimParams{Worker: "w", Limit: 1, Now: now, LeaseUntil: now.Add(time.Hour)})
	if err != nil || len(claimed) != 1 {
		t.Fatalf("claim: %v %v", claimed, err)
	}
	code := 0
	end := queue.End{Outcome: queue.OutcomeSucceeded, ExitCode: &code, Started: now, Finished: now, Output: []byte("after")}
	if _, err := s.FinishJobs(ctx, []queue.Finish{queue.RetryPolicy{}.Decide(claimed[0], "w", end, now)}); err != nil {
		t.Fatal(err)
	}
	history, err := s.Attempts(ctx, "old")
	if err != nil || len(history) != 2 || history[0].Outcome != queue.OutcomeFailed || history[1].Outcome != queue.OutcomeSucceeded {
		t.Fatalf("history: %+v %v", history, err)
	}
	for i, w := range []string{"before", "after"} {
		a, err := s.OutputAt(ctx, "old", i)
		if err != nil || string(a.Output) != w {
			t.Errorf("output %d: %+v %v, want %q", i, a, err, w)
		}
	}
}

// insertAndClaim inserts jobs with the given ids and claims them all.
func insertAndClaim(t *testing.T, s queue.Store, now time.Time, ids ...string) []*queue.Job {
	t.Helper()
	var jobs []*queue.Job
	for _, id := range ids {
		j, err := queue.NewJob{ID: id, Command: "true"}.Resolve(queue.DefaultSettings(), now)
		if err != nil {
			t.Fatal(err)
		}
		jobs = append(jobs, j)
	}
	if err := s.InsertJobs(context.Background(), jobs); err != nil {
		t.Fatal(err)
	}
	claimed, err := s.ClaimJobs(context.Background(), queue.ClaimParams{Worker: "w", Limit: len(ids), Now: now.Add(time.Second),
		LeaseUntil: now.Add(time.Hour)})
	if err != nil || len(claimed) != len(ids) {
		t.Fatalf("claim: %d jobs, %v", len(claimed), err)
	}
	return claimed
}
