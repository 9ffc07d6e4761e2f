package main

// End-to-end tests of running queuectl as a service: backup and restore,
// moving to PostgreSQL, retention, systemd notifications, log rotation.

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestE2EBackupWhileWorkersRun copies the database while workers run jobs,
// restores the copy in place of the database, and reads every job from
// it; the jobs that were running at the copy run again to completion.
func TestE2EBackupWhileWorkersRun(t *testing.T) {
	c := newCLI(t)
	const n = 60
	// Every third job fails for good (max_retries 0); the others succeed.
	enqueueMany(t, c, n, `case $QUEUECTL_JOB_ID in *[036]) echo failing; exit 3;; *) echo ok;; esac`)
	c.ok("config", "set", "max-retries", "0")
	c.ok("worker", "start", "--count", "2")
	waitFor(t, "some jobs to finish", 30*time.Second, func() bool {
		return len(c.list("completed")) >= 5
	})
	backup := filepath.Join(c.home, "backup.db")
	if out := c.ok("backup", backup); !strings.Contains(out, "backed up to "+backup) {
		t.Fatalf("backup: %q", out)
	}
	if _, errOut, code := c.run("backup", backup); code == 0 || !strings.Contains(errOut, "exists") {
		t.Fatalf("a second backup to the same file: exit %d %s", code, errOut)
	}
	if fi, err := os.Stat(backup); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("backup file: %v %v", fi, err)
	}
	c.ok("worker", "stop")

	// Restore: replace the database by the copy.
	db := filepath.Join(c.home, "queue.db")
	for _, f := range []string{db, db + "-wal", db + "-shm"} {
		os.Remove(f)
	}
	b, err := os.ReadFile(backup)
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, db, string(b))
	jobs := c.list("")
	if len(jobs) != n {
		t.Fatalf("restored %d jobs, want %d", len(jobs), n)
	}
	for _, j := range jobs {
		v := c.job(j.ID)
		if v.State == "completed" && (len(v.History) == 0 || v.History[len(v.History)-1].Outcome != "succeeded") {
			t.Fatalf("restored job %s has no history of its success: %+v", j.ID, v)
		}
	}
	c.ok("worker", "start", "--count", "2")
	waitFor(t, "every restored job to finish", 60*time.Second, func() bool {
		return len(c.list("completed"))+len(c.list("dead")) == n
	})
	if dead := len(c.list("dead")); dead != n/10*3 {
		t.Fatalf("%d dead jobs, want %d", dead, n/10*3)
	}
}
