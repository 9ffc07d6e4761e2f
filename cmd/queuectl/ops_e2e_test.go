package main

// End-to-end tests of running queuectl as a service: backup and restore,
// moving to PostgreSQL, retention, systemd notifications, log rotation.

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/queuectl/queuectl/queue/postgres"
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

// A backup stopped by SIGTERM (a job's timeout, systemd) or Ctrl-C writes
// nothing: neither FILE nor the partial copy is left behind.
func TestE2EBackupStoppedLeavesNothing(t *testing.T) {
	c := newCLI(t)
	c.ok("enqueue", "--command", "true")
	// Enough pages that the copy is still being written when stopped.
	db, err := sql.Open("sqlite3", filepath.Join(c.home, "queue.db"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`CREATE TABLE pad(b BLOB);
		WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i+1 FROM n WHERE i < 256)
		INSERT INTO pad SELECT randomblob(1 << 20) FROM n`); err != nil {
		t.Fatal(err)
	}
	db.Close()
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT} {
		t.Run(sig.String(), func(t *testing.T) {
			dir := t.TempDir()
			cmd := c.cmd("backup", filepath.Join(dir, "backup.db"))
			var errb strings.Builder
			cmd.Stderr = &errb
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			waitFor(t, "the copy to start", 30*time.Second, func() bool {
				names, _ := filepath.Glob(filepath.Join(dir, ".backup.db.partial-*"))
				return len(names) > 0
			})
			cmd.Process.Signal(sig)
			err := cmd.Wait()
			if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 1 || !strings.Contains(errb.String(), "backup: stopped") {
				t.Fatalf("backup stopped by %v: %v, stderr %q; want exit 1 saying it stopped", sig, err, errb.String())
			}
			if left, _ := os.ReadDir(dir); len(left) != 0 {
				t.Fatalf("a stopped backup left %v", left)
			}
		})
	}
}

// TestE2ESystemdNotify runs the service under a notification socket made
// as systemd makes it: READY=1 once it works, WATCHDOG=1 keep-alives,
// RELOADING=1 and READY=1 around a SIGHUP (whose log says what changed),
// STOPPING=1 on SIGTERM.
func TestE2ESystemdNotify(t *testing.T) {
	c := newCLI(t)
	sock := filepath.Join(c.home, "notify.sock")
	conn, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: sock, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	cfg := filepath.Join(c.home, "queue.hcl")
	writeFile(t, cfg, `queue "default" { concurrency = 2 }
queue "mail" {}
job "a" {
  schedule = "@daily"
  command  = "true"
}
job "b" {
  schedule = "@hourly"
  command  = "true"
}
`)
	svc := c.startServiceEnv([]string{"NOTIFY_SOCKET=" + sock, "WATCHDOG_USEC=400000"}, "-c", cfg)
	watchdogs := 0
	// next returns the next notification other than a keep-alive.
	next := func() string {
		t.Helper()
		for {
			conn.SetReadDeadline(time.Now().Add(10 * time.Second))
			buf := make([]byte, 4096)
			n, err := conn.Read(buf)
			if err != nil {
				t.Fatalf("no notification: %v\n%s", err, svc.log())
			}
			if msg := string(buf[:n]); msg != "WATCHDOG=1" {
				return msg
			}
			watchdogs++
		}
	}
	if msg := next(); msg != "READY=1" {
		t.Fatalf("first notification %q", msg)
	}
	// "service started" is logged before READY=1 (it reaches the test
	// through a pipe, so it may show a moment later).
	waitFor(t, "the service's start log line", 10*time.Second, func() bool {
		return strings.Contains(svc.log(), `"message":"service started"`)
	})
	// Keep-alives come every 200ms: wait for two.
	deadline := time.Now().Add(10 * time.Second)
	for watchdogs < 2 && time.Now().Before(deadline) {
		conn.SetReadDeadline(deadline)
		buf := make([]byte, 64)
		if n, err := conn.Read(buf); err == nil && string(buf[:n]) == "WATCHDOG=1" {
			watchdogs++
		}
	}
	if watchdogs < 2 {
		t.Fatalf("%d watchdog keep-alives", watchdogs)
	}

	writeFile(t, cfg, `queue "default" { concurrency = 3 }
queue "reports" {}
job "a" {
  schedule = "@weekly"
  command  = "true"
}
job "c" {
  schedule = "@hourly"
  command  = "true"
}
`)
	svc.signal(syscall.SIGHUP)
	if msg := next(); msg != "RELOADING=1" {
		t.Fatalf("on SIGHUP: %q", msg)
	}
	if msg := next(); msg != "READY=1" {
		t.Fatalf("after reload: %q", msg)
	}
	// The log line is written before READY=1, but reaches the test
	// through a pipe: wait for it.
	var reload map[string]any
	waitFor(t, "the reload's log line", 10*time.Second, func() bool {
		for _, line := range strings.Split(svc.log(), "\n") {
			if strings.Contains(line, `"configuration reloaded"`) {
				return json.Unmarshal([]byte(line), &reload) == nil
			}
		}
		return false
	})
	want := map[string]string{
		"queues_added": "[reports]", "queues_removed": "[mail]", "queues_changed": "[default]",
		"jobs_added": "[c]", "jobs_removed": "[b]", "jobs_changed": "[a]",
	}
	for k, v := range want {
		if got := fmt.Sprint(reload[k]); got != v {
			t.Errorf("reload log %s = %s, want %s\n%s", k, got, v, svc.log())
		}
	}
	svc.signal(syscall.SIGTERM)
	if msg := next(); msg != "STOPPING=1" {
		t.Fatalf("on SIGTERM: %q", msg)
	}
	if err := svc.wait(10 * time.Second); err != nil {
		t.Fatalf("service exit: %v\n%s", err, svc.log())
	}
}

// TestExampleUnit checks examples/queuectl.service against what the
// service needs: notify type, a dedicated user, a reload by SIGHUP, a stop
// signal for queuectl alone, and a stop timeout that covers --grace and
// --kill-grace of its ExecStart. Then it runs that ExecStart (with a test
// file) under a notification socket until READY=1.
func TestExampleUnit(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "..", "examples", "queuectl.service"))
	if err != nil {
		t.Fatal(err)
	}
	unit := map[string]string{}
	for _, line := range strings.Split(string(b), "\n") {
		if k, v, ok := strings.Cut(line, "="); ok && !strings.HasPrefix(line, "#") {
			unit[k] = v
		}
	}
	for k, want := range map[string]string{
		"Type": "notify", "NotifyAccess": "main", "KillMode": "mixed", "ExecReload": "/bin/kill -HUP $MAINPID", "User": "queuectl",
	} {
		if unit[k] != want {
			t.Errorf("%s=%q, want %q", k, unit[k], want)
		}
	}
	args := strings.Fields(unit["ExecStart"])
	if len(args) < 4 || filepath.Base(args[0]) != "queuectl" || args[1] != "run" {
		t.Fatalf("ExecStart=%q", unit["ExecStart"])
	}
	flag := func(name string) time.Duration {
		for i, a := range args {
			if a == name && i+1 < len(args) {
				d, err := time.ParseDuration(args[i+1])
				if err != nil {
					t.Fatalf("%s %s: %v", name, args[i+1], err)
				}
				return d
			}
		}
		t.Fatalf("ExecStart has no %s", name)
		return 0
	}
	stop, err := time.ParseDuration(unit["TimeoutStopSec"])
	if err != nil {
		t.Fatal(err)
	}
	if grace, kill := flag("--grace"), flag("--kill-grace"); stop < grace+kill+10*time.Second {
		t.Errorf("TimeoutStopSec=%s does not cover --grace %s + --kill-grace %s + 10s", stop, grace, kill)
	}

	c := newCLI(t)
	cfg := filepath.Join(c.home, "queue.hcl")
	writeFile(t, cfg, `database = "queue.db"`+"\n")
	for i, a := range args {
		if a == "-c" {
			args[i+1] = cfg
		}
	}
	sock := filepath.Join(c.home, "notify.sock")
	conn, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: sock, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	svc := exec.Command(binary, args[1:]...)
	svc.Env = append(c.cmd().Env, "NOTIFY_SOCKET="+sock)
	if err := svc.Start(); err != nil {
		t.Fatal(err)
	}
	defer svc.Wait()
	defer svc.Process.Signal(syscall.SIGTERM)
	conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	buf := make([]byte, 64)
	if n, err := conn.Read(buf); err != nil || string(buf[:n]) != "READY=1" {
		t.Fatalf("ExecStart: %q %v", buf[:n], err)
	}
}

// TestE2ERetentionAndCleanup: cleanup counts with --dry-run and keeps dead
// jobs unless asked; a service's retention block deletes dead jobs and
// drops old output, and show says how much output went.
func TestE2ERetentionAndCleanup(t *testing.T) {
	c := newCLI(t)
	c.ok("enqueue", "--id", "big", "--command", "head -c 2000000 /dev/zero")
	for _, id := range []string{"ok1", "ok2"} {
		c.ok("enqueue", "--id", id, "--command", "echo hello")
	}
	for _, id := range []string{"bad1", "bad2"} {
		c.ok("enqueue", "--id", id, "--command", "exit 3", "--max-retries", "0")
	}
	c.ok("worker", "start")
	waitFor(t, "jobs to finish", 30*time.Second, func() bool {
		return len(c.list("completed")) == 3 && len(c.list("dead")) == 2
	})
	c.ok("worker", "stop")

	// The cap (1 MiB) kept the head and the tail of the big output: show
	// says so, and by how much.
	if out := c.ok("show", "big"); !strings.Contains(out, fmt.Sprintf("note: the output of attempt 1 was truncated: %d bytes dropped", 2000000-1<<20)) {
		t.Fatalf("show does not say the output was truncated, by how much:\n%s", out)
	}
	if out := c.ok("cleanup", "--older-than", "0s", "--dry-run"); out != "would delete 3 job(s)\n" {
		t.Fatalf("cleanup --dry-run: %q", out)
	}
	if n := len(c.list("")); n != 5 {
		t.Fatalf("--dry-run deleted jobs: %d left", n)
	}
	if out := c.ok("cleanup", "--older-than", "0s", "--state", "dead", "--dry-run"); out != "would delete 2 job(s)\n" {
		t.Fatalf("cleanup --state dead --dry-run: %q", out)
	}

	cfg := filepath.Join(c.home, "queue.hcl")
	writeFile(t, cfg, `database = "queue.db"
retention {
  dead   = "1s"
  output = "1s"
}
`)
	// Retention counts from when the jobs finished: let a second pass.
	var last time.Time
	for _, j := range c.list("") {
		v := c.job(j.ID)
		if f := v.History[len(v.History)-1].FinishedAt; f.After(last) {
			last = f
		}
	}
	waitFor(t, "a second since the last job finished", 5*time.Second, func() bool { return time.Since(last) > 1100*time.Millisecond })
	svc := c.startService("-c", cfg)
	waitFor(t, "retention to delete the dead jobs", 20*time.Second, func() bool { return len(c.list("dead")) == 0 })
	waitFor(t, "retention to drop the output", 20*time.Second, func() bool {
		out, _, _ := c.run("output", "ok1")
		return out == ""
	})
	if n := len(c.list("completed")); n != 3 {
		t.Fatalf("completed jobs without a retention were deleted: %d left", n)
	}
	_, errOut, _ := c.run("output", "ok1")
	if !strings.Contains(errOut, "6 bytes of this output were dropped") {
		t.Fatalf("output of a pruned attempt: %q", errOut)
	}
	svc.signal(syscall.SIGTERM)
	if err := svc.wait(10 * time.Second); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(svc.log(), `"retention: pruned"`) {
		t.Fatalf("the service did not log what it pruned:\n%s", svc.log())
	}
}

// TestE2EMigrateToPostgres copies a SQLite database with jobs in every
// finished state, history, output, settings, queues and a recurring job to
// a PostgreSQL schema, compares every job and its history, and runs the
// pending job there.
func TestE2EMigrateToPostgres(t *testing.T) {
	_, pg := newPGSchema(t)
	c := newCLI(t)
	c.ok("config", "set", "max-retries", "0")
	c.ok("enqueue", "--id", "ok", "--command", "echo done; echo to stderr >&2")
	// Each life of "bad" prints its own number: it dies, is retried and
	// dies again, so its two attempts are both number 1.
	lives := filepath.Join(c.home, "lives")
	c.ok("enqueue", "--id", "bad", "--command", "echo x >> "+lives+"; echo failing $(wc -l < "+lives+"); exit 4")
	c.ok("enqueue", "--id", "gone", "--command", "true", "--run-at", "+1h")
	c.ok("cancel", "gone")
	cfg := filepath.Join(c.home, "queue.hcl")
	writeFile(t, cfg, `database = "queue.db"
queue "reports" { concurrency = 2 }
job "nightly" {
  queue    = "reports"
  schedule = "@daily"
  command  = "echo nightly"
}
`)
	c.ok("-c", cfg, "cron", "trigger", "nightly")
	c.ok("worker", "start")
	waitFor(t, "jobs to finish", 30*time.Second, func() bool {
		return len(c.list("completed")) == 2 && len(c.list("dead")) == 1
	})
	c.ok("dlq", "retry", "bad")
	waitFor(t, "the retried job to die again", 30*time.Second, func() bool {
		return len(c.list("dead")) == 1 && len(c.job("bad").History) == 2
	})
	c.ok("worker", "stop")
	c.ok("enqueue", `{"id":"later","command":"echo later $A","env":{"A":"1"},"priority":3}`)
	c.ok("queue", "pause", "reports")
	c.ok("queue", "set", "reports", "--max-running", "1", "--rate-limit", "10/m")

	out := c.ok("migrate", "--to", pg)
	if !strings.Contains(out, "copied 5 job(s) with 4 attempt(s), 1 setting(s), 2 queue(s) and 1 recurring job(s)") {
		t.Fatalf("migrate: %q", out)
	}
	for _, j := range c.list("") {
		want := c.ok("show", j.ID, "--json")
		if got := c.ok("--db", pg, "show", j.ID, "--json"); got != want {
			t.Errorf("job %s differs in PostgreSQL:\n%s\nwant\n%s", j.ID, got, want)
		}
		wantOut, _, wantCode := c.run("output", j.ID)
		if got, _, code := c.run("--db", pg, "output", j.ID); got != wantOut || code != wantCode {
			t.Errorf("output of %s differs: %q (exit %d), want %q (exit %d)", j.ID, got, code, wantOut, wantCode)
		}
	}
	// Each life's output went with its own attempt.
	dst, err := postgres.Open(context.Background(), pg)
	if err != nil {
		t.Fatal(err)
	}
	defer dst.Close()
	for i, want := range []string{"failing 1\n", "failing 2\n"} {
		if a, err := dst.OutputAt(context.Background(), "bad", i); err != nil || string(a.Output) != want {
			t.Errorf("migrated output of bad's attempt at %d: %+v %v, want %q", i, a, err, want)
		}
	}
	if got := c.ok("--db", pg, "config", "get", "max-retries"); got != "0\n" {
		t.Errorf("setting: %q", got)
	}
	if got := c.ok("--db", pg, "cron", "list"); !strings.Contains(got, "nightly") {
		t.Errorf("recurring jobs: %q", got)
	}
	type control struct {
		Name       string  `json:"name"`
		Paused     bool    `json:"paused"`
		MaxRunning int     `json:"max_running"`
		RateLimit  *string `json:"rate_limit"`
	}
	var got []control
	json.Unmarshal([]byte(c.ok("--db", pg, "queue", "list", "--json")), &got)
	if len(got) != 2 || got[1].Name != "reports" || !got[1].Paused || got[1].MaxRunning != 1 || got[1].RateLimit == nil || *got[1].RateLimit != "10/m" {
		t.Errorf("queue controls in PostgreSQL: %+v; want reports paused, 1 running at most, 10/m", got)
	}
	if _, errOut, code := c.run("migrate", "--to", pg); code == 0 || !strings.Contains(errOut, "already holds 5 job(s)") {
		t.Fatalf("a second migrate: exit %d %s", code, errOut)
	}
	// The copy works: a worker on PostgreSQL runs the pending job.
	h := newPGHost(t, pg, "migrated")
	h.startWorkers()
	h.waitState("later", "completed", 30*time.Second)
}

// Workers may already wait on the target when the copy is made: a queue
// paused in SQLite stays paused throughout, so none of its jobs runs, and a
// limited queue is never run past its limit. The pauses and limits are
// stored before the jobs they hold back.
func TestE2EMigrateToPostgresKeepsPausedQueueHeldForWaitingWorkers(t *testing.T) {
	_, pg := newPGSchema(t)
	c := newCLI(t)
	var file strings.Builder
	for i := range 40 {
		fmt.Fprintf(&file, `{"id":"held-%d","queue":"held","command":"true"}`+"\n", i)
	}
	jobs := filepath.Join(c.home, "held.jsonl")
	writeFile(t, jobs, file.String())
	c.ok("enqueue", "--file", jobs)
	c.ok("queue", "pause", "held")
	for _, kv := range [][2]string{{"max-retries", "5"}, {"backoff-base", "3"}, {"max-backoff", "2h"}, {"timeout", "1h"}} {
		c.ok("config", "set", kv[0], kv[1])
	}
	h := newPGHost(t, pg, "waiting")
	h.startWorkers("--count", "2", "--concurrency", "4")

	c.ok("migrate", "--to", pg)
	var pending []pgJob
	if err := json.Unmarshal([]byte(h.ok("list", "--json", "--limit", "0", "--state", "pending")), &pending); err != nil {
		t.Fatal(err)
	}
	if len(pending) != 40 {
		t.Errorf("%d of the paused queue's 40 jobs pending after the copy, want all: the waiting workers ran the others", len(pending))
	}
}

// A worker still running on the source, even idle, refuses the copy: it
// would claim the copied pending jobs there too, and they would run twice,
// once on each database. Nothing is copied; once it is stopped the copy
// goes through.
func TestE2EMigrateToPostgresRefusesWhileAWorkerRuns(t *testing.T) {
	_, pg := newPGSchema(t)
	c := newCLI(t)
	c.ok("worker", "start")
	c.ok("enqueue", "--id", "soon", "--command", "true", "--run-at", "+1h")
	_, errOut, code := c.run("migrate", "--to", pg)
	if code != 1 || !strings.Contains(errOut, "is running on the source; stop it first (queuectl worker stop)") ||
		strings.Count(strings.TrimSpace(errOut), "\n") != 0 {
		t.Fatalf("migrate --to with a worker running on the source: exit %d, %q; want exit 1 naming it", code, errOut)
	}
	if got := c.ok("--db", pg, "list"); strings.Contains(got, "soon") {
		t.Fatalf("a refused copy stored jobs:\n%s", got)
	}
	c.ok("worker", "stop")
	if out := c.ok("migrate", "--to", pg); !strings.Contains(out, "copied 1 job(s)") {
		t.Fatalf("migrate after the worker stopped: %q", out)
	}
}

// A job left processing by a worker that was killed refuses the copy, but
// stopping workers cannot help (none runs): the error says its worker is
// gone and how to have the job rescued, and the copy goes through after.
func TestE2EMigrateToPostgresNamesAGoneWorkersJob(t *testing.T) {
	_, pg := newPGSchema(t)
	c := newCLI(t)
	started := filepath.Join(c.home, "started")
	c.ok("enqueue", "--id", "orphan", "--command", "touch "+started+"; sleep 2")
	pid, _ := strconv.Atoi(strings.TrimSpace(c.ok("worker", "start")))
	waitFor(t, "the job to start", 20*time.Second, func() bool {
		_, err := os.Stat(started)
		return err == nil
	})
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the worker to die", 10*time.Second, func() bool { return syscall.Kill(pid, 0) != nil })
	_, errOut, code := c.run("migrate", "--to", pg)
	if code != 1 || !strings.Contains(errOut, `job "orphan" is marked running by worker `) ||
		!strings.Contains(errOut, "which is gone; let a worker rescue it first (queuectl worker start, then worker stop once the job is no longer processing") {
		t.Fatalf("migrate --to with a gone worker's job: exit %d, %q", code, errOut)
	}
	c.ok("worker", "start")
	c.waitState("orphan", "completed", 30*time.Second)
	c.ok("worker", "stop")
	if out := c.ok("migrate", "--to", pg); !strings.Contains(out, "copied 1 job(s)") {
		t.Fatalf("migrate after the rescue: %q", out)
	}
}

// TestE2ESmallThings: what a newcomer trips on. list --json can be fed
// back to enqueue --file; status and stats name the total row alike; config
// get and show write "no timeout" alike; show --json has scheduled_at.
func TestE2ESmallThings(t *testing.T) {
	c := newCLI(t)
	c.ok("enqueue", "--id", "a", "--command", "echo a", "--priority", "4", "--timeout", "90s")
	c.ok("enqueue", "--id", "b", "--command", "echo b", "--queue", "mail")
	file := filepath.Join(c.home, "jobs.json")
	writeFile(t, file, c.ok("list", "--json", "--limit", "0"))
	other := filepath.Join(c.home, "other.db")
	out, errOut, code := c.run("--db", other, "enqueue", "--file", file)
	if code != 0 || out != "b\na\n" || !strings.Contains(errOut, "note: ignored read-only fields: attempts, created_at,") {
		t.Fatalf("enqueue --file of list --json: exit %d %q %q", code, out, errOut)
	}
	var a jobView
	json.Unmarshal([]byte(c.ok("--db", other, "show", "a", "--json")), &a)
	if a.Priority != 4 || a.Timeout == nil || *a.Timeout != 90 || a.State != "pending" {
		t.Fatalf("copied job: %+v", a)
	}
	if show := c.ok("show", "a", "--json"); !strings.Contains(show, `"scheduled_at": null`) || !strings.Contains(show, `"run_at": "`) {
		t.Fatalf("show --json: %s", show)
	}
	c.ok("enqueue", "--id", "c", "--command", "true")
	if got, show := c.ok("config", "get", "timeout"), c.ok("show", "c"); got != "none\n" || !strings.Contains(show, "timeout:      none") {
		t.Fatalf("config get timeout %q; show:\n%s", got, show)
	}
	if all := c.ok("config", "show"); !regexp.MustCompile(`(?m)^timeout\s+none\s+default$`).MatchString(all) {
		t.Fatalf("config show does not write no timeout as config get does:\n%s", all)
	}
	for _, cmd := range []string{"status", "stats"} {
		if out := c.ok(cmd); !regexp.MustCompile(`(?m)^total\s`).MatchString(out) {
			t.Errorf("%s has no total row:\n%s", cmd, out)
		}
	}
}
