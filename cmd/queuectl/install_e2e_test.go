package main

// End-to-end tests of first contact: version, completion, man pages, and
// every command following -c FILE to the file's database.

import (
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestE2EVersion(t *testing.T) {
	c := newCLI(t)
	line := strings.TrimSpace(c.ok("--version"))
	if !regexp.MustCompile(`^queuectl \S+ \(commit \S+, built \S+\)$`).MatchString(line) {
		t.Fatalf("--version: %q", line)
	}
	if got := strings.TrimSpace(c.ok("version")); got != line {
		t.Fatalf("version %q, --version %q", got, line)
	}
	var v buildVersion
	if err := json.Unmarshal([]byte(c.ok("version", "--json")), &v); err != nil {
		t.Fatal(err)
	}
	if v.GoVersion != runtime.Version() || v.Version == "" {
		t.Fatalf("version --json: %+v", v)
	}
}

// TestE2EVersionFromGit builds with VCS stamping, as go install from a
// clone does, and checks the commit is the checkout's.
func TestE2EVersionFromGit(t *testing.T) {
	head, err := exec.Command("git", "rev-parse", "HEAD").Output()
	if err != nil {
		t.Skipf("not a git checkout: %v", err)
	}
	top, _ := exec.Command("git", "rev-parse", "--show-toplevel").Output()
	if fi, err := os.Stat(filepath.Join(strings.TrimSpace(string(top)), ".git")); err != nil || !fi.IsDir() {
		t.Skip("the go command stamps VCS information only in a main checkout, not in a linked worktree")
	}
	bin := filepath.Join(t.TempDir(), "queuectl")
	build := exec.Command("go", "build", "-buildvcs=true", "-o", bin, ".")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	out, err := exec.Command(bin, "version", "--json").Output()
	if err != nil {
		t.Fatal(err)
	}
	var v buildVersion
	if err := json.Unmarshal(out, &v); err != nil {
		t.Fatal(err)
	}
	if v.Commit != strings.TrimSpace(string(head)) || v.BuildDate == "unknown" {
		t.Fatalf("version --json %+v, HEAD %s", v, head)
	}
}

func TestE2ECompletion(t *testing.T) {
	c := newCLI(t)
	for _, sh := range []string{"bash", "zsh", "fish", "powershell"} {
		if out := c.ok("completion", sh); !strings.Contains(out, "queuectl") {
			t.Fatalf("completion %s: %q", sh, out)
		}
	}
	// Nothing is created by completing against a database that is not there.
	if out := c.ok("__complete", "show", ""); strings.Contains(out, "\n:4\n") && strings.Count(out, "\n") > 2 {
		t.Fatalf("completion without a database: %q", out)
	}
	if _, err := os.Stat(filepath.Join(c.home, "queue.db")); err == nil {
		t.Fatal("completion created the database")
	}
	c.ok("enqueue", "--command", "true", "--id", "alpha-1", "--queue", "mail")
	c.ok("enqueue", "--command", "true", "--id", "alpha-2")
	c.ok("enqueue", "--command", "true", "--id", "beta")
	cfg := filepath.Join(c.home, "queue.hcl")
	writeFile(t, cfg, `queue "reports" {}
job "nightly" {
  schedule = "@daily"
  command  = "true"
}
job "hourly" {
  schedule = "@hourly"
  command  = "true"
}
`)
	tests := []struct {
		args []string
		want []string
	}{
		{[]string{"show", "al"}, []string{"alpha-2", "alpha-1"}}, // newest first
		{[]string{"cancel", "b"}, []string{"beta"}},
		{[]string{"dlq", "retry", ""}, nil},
		{[]string{"list", "--state", "de"}, []string{"dead"}},
		{[]string{"-c", cfg, "cron", "trigger", "n"}, []string{"nightly"}},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			out := c.ok(append([]string{"__complete"}, tt.args...)...)
			if got := completions(out); strings.Join(got, ",") != strings.Join(tt.want, ",") {
				t.Fatalf("got %q, want %q", got, tt.want)
			}
		})
	}
	// Queue names come from the queues a service applied.
	c.ok("-c", cfg, "cron", "trigger", "nightly")
	if got := completions(c.ok("__complete", "list", "--queue", "")); strings.Join(got, ",") != "default,reports" {
		t.Fatalf("queue completion: %q", got)
	}
}

// completions are the lines __complete prints before its directive.
func completions(out string) []string {
	var got []string
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		if l != "" && !strings.HasPrefix(l, ":") {
			got = append(got, strings.SplitN(l, "\t", 2)[0])
		}
	}
	return got
}

// TestE2EManPages builds with -tags man, as make man does, and writes the
// pages; the binary built without the tag has no man command.
func TestE2EManPages(t *testing.T) {
	c := newCLI(t)
	if _, errOut, code := c.run("man", filepath.Join(c.home, "nothing")); code == 0 || !strings.Contains(errOut, "unknown command") {
		t.Fatalf("man without -tags man: exit %d %s", code, errOut)
	}
	bin := filepath.Join(t.TempDir(), "queuectl-man")
	if out, err := exec.Command("go", "build", "-tags", "man", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("build -tags man: %v\n%s", err, out)
	}
	dir := filepath.Join(c.home, "man")
	if out, err := exec.Command(bin, "man", dir).CombinedOutput(); err != nil {
		t.Fatalf("man %s: %v\n%s", dir, err, out)
	}
	for _, page := range []string{"queuectl.1", "queuectl-run.1", "queuectl-worker-start.1", "queuectl-cron-trigger.1"} {
		b, err := os.ReadFile(filepath.Join(dir, page))
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(b), ".TH \"QUEUECTL\"") {
			t.Fatalf("%s is no man page: %.200s", page, b)
		}
	}
}

// TestE2EConfigFileDatabase: every command given -c FILE (or
// QUEUECTL_CONFIG) uses the file's database, and --db wins over it.
func TestE2EConfigFileDatabase(t *testing.T) {
	c := newCLI(t)
	dir := filepath.Join(c.home, "svc")
	os.MkdirAll(dir, 0o755)
	cfg := filepath.Join(dir, "queue.hcl")
	writeFile(t, cfg, `database = "svc.db"
job "tick" {
  schedule = "@daily"
  command  = "echo tick"
}
`)
	id := strings.TrimSpace(c.ok("-c", cfg, "enqueue", "--command", "echo in-file-db", "--id", "filejob"))
	if id != "filejob" {
		t.Fatalf("enqueue: %q", id)
	}
	if _, err := os.Stat(filepath.Join(dir, "svc.db")); err != nil {
		t.Fatalf("the file's database was not used: %v", err)
	}
	if _, err := os.Stat(filepath.Join(c.home, "queue.db")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the default database was used: %v", err)
	}
	for _, args := range [][]string{{"-c", cfg, "list"}, {"list", "--config", cfg}, {"show", "filejob", "-c", cfg}} {
		if out := c.ok(args...); !strings.Contains(out, "filejob") {
			t.Fatalf("%v does not see the file's job:\n%s", args, out)
		}
	}
	env := c.cmd("status", "--json")
	env.Env = append(env.Env, "QUEUECTL_CONFIG="+cfg)
	out, errOut, code := runProcess(t, env)
	if code != 0 || !strings.Contains(out, `"pending": 1`) {
		t.Fatalf("QUEUECTL_CONFIG status: exit %d %s %s", code, out, errOut)
	}
	other := filepath.Join(c.home, "other.db")
	if _, errOut, _ := c.run("-c", cfg, "--db", other, "list"); !strings.Contains(errOut, "no database at "+other) {
		t.Fatalf("--db did not win over the file: %s", errOut)
	}
	// worker start and run log the database they use; the file's job runs.
	_, errOut, code = c.run("-c", cfg, "worker", "start")
	t.Cleanup(func() { c.run("-c", cfg, "worker", "stop", "--timeout", "1s") })
	db := filepath.Join(dir, "svc.db")
	if code != 0 || !strings.Contains(errOut, "started 1 worker(s) on "+db) {
		t.Fatalf("worker start: exit %d: %s", code, errOut)
	}
	waitFor(t, "filejob to complete", 10*time.Second, func() bool {
		return strings.Contains(c.ok("-c", cfg, "show", "filejob"), "completed")
	})
	logs, _ := filepath.Glob(filepath.Join(c.home, "logs", "worker-*.log"))
	if len(logs) != 1 {
		t.Fatalf("worker logs: %v", logs)
	}
	b, _ := os.ReadFile(logs[0])
	if !strings.Contains(string(b), `"database":"`+db+`"`) {
		t.Fatalf("worker log does not name the database:\n%s", b)
	}
	c.ok("-c", cfg, "worker", "stop")
	s := c.startService("-c", cfg)
	waitFor(t, "service start", 10*time.Second, func() bool {
		return strings.Contains(s.log(), `"database":"`+db+`"`)
	})
	s.signal(syscall.SIGTERM)
	if err := s.wait(10 * time.Second); err != nil {
		t.Fatalf("run: %v\n%s", err, s.log())
	}
}

func TestRedactDSN(t *testing.T) {
	tests := map[string]string{
		"/var/lib/queuectl/queue.db":                            "/var/lib/queuectl/queue.db",
		"postgres://app:s3cret@db:5432/q?sslmode=disable":       "postgres://app:xxxxx@db:5432/q?sslmode=disable",
		"postgresql://app@db/q?password=s3cret&sslmode=disable": "postgresql://app@db/q?password=xxxxx&sslmode=disable",
	}
	for in, want := range tests {
		if got := redactDSN(in); got != want {
			t.Errorf("redactDSN(%q) = %q, want %q", in, got, want)
		}
	}
}
