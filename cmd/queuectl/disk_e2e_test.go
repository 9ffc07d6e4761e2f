package main

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/queuectl/queuectl/internal/testfs"
)

// On a read-only filesystem the read commands still work, and a write
// fails with one line naming the database.
func TestE2EReadOnlyDatabase(t *testing.T) {
	c := newCLI(t)
	dir := testfs.Small(t, "8m")
	db := filepath.Join(dir, "queue.db")
	id := strings.TrimSpace(c.ok("--db", db, "enqueue", `{"id":"kept","command":"echo hi"}`))
	testfs.ReadOnly(t, dir)

	// Columns: waiting, then pending.
	if out := c.ok("--db", db, "status"); !regexp.MustCompile(`(?m)^default +0 +1 `).MatchString(out) {
		t.Errorf("status: %q", out)
	}
	if out := c.ok("--db", db, "list"); !strings.Contains(out, id) {
		t.Errorf("list: %q", out)
	}
	if out := c.ok("--db", db, "show", id); !strings.Contains(out, "echo hi") {
		t.Errorf("show: %q", out)
	}
	stdout, stderr, code := c.run("--db", db, "enqueue", `{"command":"true"}`)
	lines := strings.Split(strings.TrimSpace(stderr), "\n")
	if code == 0 || stdout != "" || len(lines) != 1 || !strings.Contains(stderr, "read-only") || !strings.Contains(stderr, db) {
		t.Fatalf("enqueue on a read-only database: exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
	// A worker cannot register: it says so once.
	_, stderr, code = c.run("--db", db, "worker", "start", "--foreground", "--log-level", "error")
	if want := "queuectl: register worker: database is read-only: " + db + "\n"; code != 1 || stderr != want {
		t.Fatalf("worker on a read-only database: exit %d, stderr %q; want 1, %q", code, stderr, want)
	}
	_, stderr, code = c.run("--db", db, "worker", "start")
	want := regexp.MustCompile(`^queuectl: worker \d+ exited at start: register worker: database is read-only: ` + regexp.QuoteMeta(db) + "\n$")
	if code != 1 || !want.MatchString(stderr) {
		t.Fatalf("detached worker on a read-only database: exit %d, stderr %q; want 1, %s", code, stderr, want)
	}
}

// In a directory its user may not write to, a database whose file is
// writable still opens read-only (SQLite cannot create its -shm there):
// status works and a write fails naming the database. Root writes any
// directory, so as root the commands run as nobody.
func TestE2EReadOnlyDirectory(t *testing.T) {
	c := newCLI(t)
	top, err := os.MkdirTemp("", "queuectl-rodir-")
	if err != nil {
		t.Fatal(err)
	}
	dir, home := filepath.Join(top, "db"), filepath.Join(top, "home")
	t.Cleanup(func() {
		os.Chmod(dir, 0o700)
		os.RemoveAll(top)
	})
	for _, d := range []string{dir, home} {
		if err := os.Mkdir(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	db := filepath.Join(dir, "queue.db")
	c.ok("--db", db, "enqueue", `{"id":"kept","command":"echo hi"}`)
	bin := filepath.Join(top, "queuectl") // where nobody may run it
	testfs.Copy(t, binary, bin)
	if err := os.Chmod(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	as := func(cmd *exec.Cmd) *exec.Cmd { return cmd }
	if os.Geteuid() == 0 {
		const nobody = 65534
		for _, p := range []string{top, dir, home, bin, db, db + "-lock", db + "-wake", db + "-events"} {
			if err := os.Chown(p, nobody, nobody); err != nil && !os.IsNotExist(err) {
				t.Fatal(err)
			}
		}
		as = func(cmd *exec.Cmd) *exec.Cmd {
			cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: nobody, Gid: nobody}}
			return cmd
		}
	}
	if err := os.Chmod(top, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o500); err != nil {
		t.Fatal(err)
	}
	run := func(args ...string) (string, string, int) {
		cmd := as(exec.Command(bin, append([]string{"--db", db}, args...)...))
		cmd.Env = append(os.Environ(), "QUEUECTL_HOME="+home)
		cmd.Dir = home
		return runProcess(t, cmd)
	}
	if out, errOut, code := run("status"); code != 0 || !regexp.MustCompile(`(?m)^default +0 +1 `).MatchString(out) {
		t.Fatalf("status in a read-only directory: exit %d: %q %q", code, out, errOut)
	}
	stdout, stderr, code := run("enqueue", `{"command":"true"}`)
	if code == 0 || stdout != "" || !strings.Contains(stderr, "read-only") || !strings.Contains(stderr, db) {
		t.Fatalf("enqueue in a read-only directory: exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
}

// A write on a full disk fails with one line that says so and names the
// database; nothing is stored.
func TestE2EDiskFull(t *testing.T) {
	c := newCLI(t)
	dir := testfs.Small(t, "4m")
	db := filepath.Join(dir, "queue.db")
	c.ok("--db", db, "enqueue", `{"id":"kept","command":"true"}`)
	testfs.Fill(t, filepath.Join(dir, "filler"))
	file := filepath.Join(c.home, "jobs.jsonl")
	var b strings.Builder
	for range 2000 {
		b.WriteString(`{"command":"` + strings.Repeat("echo lots of output; ", 20) + `"}` + "\n")
	}
	writeFile(t, file, b.String())
	// Read commands still work on the full disk.
	if out := c.ok("--db", db, "list"); !strings.Contains(out, "kept") {
		t.Errorf("list on a full disk: %q", out)
	}
	stdout, stderr, code := c.run("--db", db, "enqueue", "--file", file)
	lines := strings.Split(strings.TrimSpace(stderr), "\n")
	if code == 0 || stdout != "" || len(lines) != 1 || !strings.Contains(stderr, "disk full") || !strings.Contains(stderr, db) {
		t.Fatalf("enqueue on a full disk: exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
	var jobs []jobView
	if err := json.Unmarshal([]byte(c.ok("--db", db, "list", "--json", "--limit", "0")), &jobs); err != nil {
		t.Fatal(err)
	}
	if len(jobs) != 1 || jobs[0].ID != "kept" {
		t.Fatalf("after the failed enqueue the database holds %v, want only kept", jobs)
	}
}

// worker stop run by a user who may not signal the workers (another user
// started them) says so at once, naming them, instead of waiting for
// workers it never reached. Root runs it as nobody.
func TestE2EWorkerStopOfAnotherUsersWorkers(t *testing.T) {
	if os.Geteuid() != 0 {
		msg := "another user's workers need two users: run as root"
		if os.Getenv("CI") == "true" {
			t.Fatal("CI=true, so this is a failure: " + msg)
		}
		t.Skip(msg)
	}
	c := newCLI(t)
	top, err := os.MkdirTemp("", "queuectl-otheruser-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(top) })
	db, home := filepath.Join(top, "queue.db"), filepath.Join(top, "home")
	pid := strings.TrimSpace(c.ok("--db", db, "worker", "start"))
	t.Cleanup(func() { c.run("--db", db, "worker", "stop", "--timeout", "1s") })
	bin := filepath.Join(top, "queuectl")
	testfs.Copy(t, binary, bin)
	const nobody = 65534
	if err := os.Mkdir(home, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(home, nobody, nobody); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{top, bin, db, db + "-wal", db + "-shm"} {
		if err := os.Chmod(p, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "--db", db, "worker", "stop")
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: nobody, Gid: nobody}}
	cmd.Env = append(os.Environ(), "QUEUECTL_HOME="+home)
	cmd.Dir = home
	_, stderr, code := runProcess(t, cmd)
	want := "queuectl: stop worker " + pid + ": operation not permitted (run as the user that started it)\n"
	if code != 1 || !strings.HasSuffix(stderr, want) {
		t.Fatalf("worker stop of another user's workers: exit %d, stderr %q; want 1, ending %q", code, stderr, want)
	}
}
