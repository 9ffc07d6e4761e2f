package sqlite

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestClaimUsesIndexInOrder checks that the claim never sorts the runnable
// jobs: it must walk a claim index in claim order (and read the controls
// once, not per job).
func TestClaimUsesIndexInOrder(t *testing.T) {
	s, err := Open(context.Background(), filepath.Join(t.TempDir(), "q.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for _, queues := range [][]string{nil, {"a"}, {"a", "b"}} {
		q := freeQuery(queues, 3)
		args := []any{5}
		for range 2 {
			for _, x := range queues {
				args = append(args, x)
			}
		}
		p := queryPlan(t, s, q, args...)
		if !strings.Contains(p, "jobs_claim") || strings.Contains(p, "TEMP B-TREE") || strings.Contains(p, "CORRELATED SCALAR SUBQUERY 2") {
			t.Errorf("queues %v: plan %q", queues, p)
		}
	}
}

// TestStatsReadIndexRanges checks that statistics read ranges of
// run_slots' key and of attempts_slowest and jobs_slowest, never a whole
// table, and never sort the attempts of a minute.
func TestStatsReadIndexRanges(t *testing.T) {
	s, err := Open(context.Background(), filepath.Join(t.TempDir(), "q.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for _, c := range []struct {
		query string
		args  []any
		want  []string
	}{
		{runTimes, []any{1, 2, 0}, []string{"SEARCH run_slots USING PRIMARY KEY (span=? AND slot>? AND slot<?)",
			"SEARCH run_slots USING PRIMARY KEY (span=? AND slot>?)"}},
		{hourMaxima, []any{1}, []string{"SEARCH run_slots USING PRIMARY KEY (span=? AND slot>?)"}},
		{longestAttempts + limitTo(3), []any{1, 2}, []string{"SEARCH a USING INDEX attempts_slowest (<expr>=? AND <expr>>?)"}},
		{longestFinal + limitTo(3), []any{1, 2}, []string{"SEARCH jobs USING INDEX jobs_slowest (<expr>=? AND <expr>>?)"}},
	} {
		p := queryPlan(t, s, c.query, c.args...)
		for _, w := range c.want {
			if !strings.Contains(p, w) {
				t.Errorf("plan %q lacks %q", p, w)
			}
		}
		if strings.Contains(p, "SCAN run_slots") || strings.Contains(p, "SCAN a") || strings.Contains(p, "SCAN jobs") || strings.Contains(p, "TEMP B-TREE FOR ORDER BY") {
			t.Errorf("plan %q scans a table or sorts", p)
		}
	}
}

// queryPlan is SQLite's plan of query, its steps joined by "; ".
func queryPlan(t *testing.T, s *Store, query string, args ...any) string {
	t.Helper()
	rows, err := s.readDB.Query(`EXPLAIN QUERY PLAN `+query, args...)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var plan []string
	for rows.Next() {
		var a, b, c int
		var d string
		if err := rows.Scan(&a, &b, &c, &d); err != nil {
			t.Fatal(err)
		}
		plan = append(plan, d)
	}
	return strings.Join(plan, "; ")
}

// TestNoBoundLimit checks that no statement of the package binds its LIMIT:
// SQLite prepares such a statement again each time it is bound (limitTo).
func TestNoBoundLimit(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	bound := regexp.MustCompile(`(?i)\bLIMIT\s+[?:@$]`)
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for i, line := range strings.Split(string(b), "\n") {
			if bound.MatchString(line) {
				t.Errorf("%s:%d binds a LIMIT (write it with limitTo): %s", f, i+1, strings.TrimSpace(line))
			}
		}
	}
}

// TestAttemptsReadOneJob checks that a job's history is read through
// job_attempts by two index probes: its attempts rows and its own row.
func TestAttemptsReadOneJob(t *testing.T) {
	s, err := Open(context.Background(), filepath.Join(t.TempDir(), "q.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for _, q := range []string{
		`SELECT ` + attemptColumns + ` FROM job_attempts WHERE job_id = ? ORDER BY seq`,
		`SELECT ` + attemptColumns + `, output FROM job_attempts WHERE job_id = ? AND number = ? ORDER BY seq DESC LIMIT 1`,
	} {
		p := queryPlan(t, s, q, "j", 1)
		for _, w := range []string{"SEARCH attempts USING INDEX attempts_job (job_id=?", "SEARCH jobs USING INDEX sqlite_autoindex_jobs_1 (id=?)"} {
			if !strings.Contains(p, w) {
				t.Errorf("plan %q lacks %q", p, w)
			}
		}
		if strings.Contains(p, "SCAN attempts") || strings.Contains(p, "SCAN jobs") {
			t.Errorf("plan %q scans a table", p)
		}
	}
}

// TestScheduledCountReadsRanges checks that counting the scheduled jobs
// reads, for each queue with pending jobs, the range of
// jobs_pending_run_at past now, never the whole index.
func TestScheduledCountReadsRanges(t *testing.T) {
	s, err := Open(context.Background(), filepath.Join(t.TempDir(), "q.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	p := queryPlan(t, s, countScheduled, 1)
	if w := regexp.MustCompile(`SEARCH jobs USING (COVERING )?INDEX jobs_pending_run_at \(queue=\? AND run_at>\?\)`); !w.MatchString(p) {
		t.Errorf("plan %q lacks %q", p, w)
	}
	if strings.Contains(p, "SCAN jobs") {
		t.Errorf("plan %q scans jobs", p)
	}
}

// TestLaterChecksFindJobsByID checks that an import's commit finds the
// jobs its jobs run after by id, never by scanning the import's jobs once
// per job (quadratic: a file of 20,000 jobs each naming the next held the
// write lock for minutes).
func TestLaterChecksFindJobsByID(t *testing.T) {
	s, err := Open(context.Background(), filepath.Join(t.TempDir(), "q.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for _, q := range []string{laterMissing, laterEdges} {
		p := queryPlan(t, s, q, "import")
		if !strings.Contains(p, "SEARCH x USING INDEX sqlite_autoindex_jobs_1 (id=?)") || strings.Count(p, "jobs_staged") != 1 {
			t.Errorf("plan %q: want the import's jobs scanned once and each job it names found by id", p)
		}
	}
}
