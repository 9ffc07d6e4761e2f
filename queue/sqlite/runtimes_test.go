package sqlite_test

import (
	"context"
	"path/filepath"
	"reflect"
	"strconv"
	"testing"
	"time"

	"github.com/queuectl/queuectl/queue"
	"github.com/queuectl/queuectl/queue/sqlite"
	"github.com/queuectl/queuectl/queue/storetest"
)

// The run-time buckets of migration 11 are queue.RunTimeBounds.
func TestRunBucketsAreTheGoBounds(t *testing.T) {
	_, raw := migratedRaw(t)
	var want []string
	for _, le := range queue.RunTimeBounds() {
		want = append(want, strconv.FormatInt(le, 10))
	}
	if got := rowsText(t, raw, `SELECT le_us FROM run_buckets ORDER BY le_us`); !reflect.DeepEqual(got, want) {
		t.Fatalf("run_buckets has %d bounds, queue.RunTimeBounds %d:\n%v\n%v", len(got), len(want), got, want)
	}
}

// Migration 11 counts the attempts a database already holds: an upgraded
// database shows what a new one that recorded the same attempts shows,
// and deleting the jobs empties the histograms again.
func TestMigrationBackfillsRunTimes(t *testing.T) {
	path := filepath.Join(t.TempDir(), "queue.db")
	if err := sqlite.MigrateTo(path, 10); err != nil {
		t.Fatal(err)
	}
	raw, err := sqlite.OpenRaw(path)
	if err != nil {
		t.Fatal(err)
	}
	sample := storetest.SampleAttempts(400)
	for _, a := range sample {
		end := a.FinishedAt.UnixMicro()
		_, err := raw.Exec(`INSERT INTO jobs (id, queue, command, state, attempts, max_retries, backoff_base, max_backoff_us,
			run_at, created_at, updated_at) VALUES (?1, ?2, 'true', 'completed', 1, 0, 2, 3600000000, ?3, ?3, ?3)`, a.JobID, a.Queue, end)
		if err == nil {
			_, err = raw.Exec(`INSERT INTO attempts (job_id, number, started_at, finished_at, outcome) VALUES (?, 1, ?, ?, ?)`,
				a.JobID, end-a.Duration.Microseconds(), end, string(a.Outcome))
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	raw.Close()
	s := openAt(t, path)
	t0 := sample[0].FinishedAt.Truncate(time.Hour)
	for _, since := range []time.Time{t0.Add(-time.Hour), t0.Add(50*time.Minute + 30*time.Second), t0.Add(2 * time.Hour)} {
		storetest.CheckRunTimes(t, s, since, sample, false)
	}
	if n, err := s.DeleteJobs(context.Background(), queue.DeleteParams{Before: t0.Add(24 * time.Hour)}); err != nil || n != len(sample) {
		t.Fatalf("delete: %d %v", n, err)
	}
	raw, err = sqlite.OpenRaw(path)
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	if got := rowsText(t, raw, `SELECT count(*) FROM run_slots`); !reflect.DeepEqual(got, []string{"0"}) {
		t.Fatalf("run_slots rows after deleting every job: %v", got)
	}
}
