package main

import (
	"encoding/json"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

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
