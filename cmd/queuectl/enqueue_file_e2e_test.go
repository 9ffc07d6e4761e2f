package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// writeJobs writes n jobs j0..j(n-1) as JSON Lines, with extra lines
// appended, and returns the path.
func writeJobs(t *testing.T, n int, extra ...string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "jobs.jsonl")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	for i := range n {
		fmt.Fprintf(f, `{"id":"j%d","command":"true"}`+"\n", i)
	}
	for _, line := range extra {
		fmt.Fprintln(f, line)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}

// A file of several chunks is all or nothing: a bad last line, a
// duplicate id in a later chunk or a line over the limit store nothing,
// and each fails with one line naming its line.
func TestE2EEnqueueFileAllOrNothing(t *testing.T) {
	c := newCLI(t)
	tests := []struct {
		name  string
		extra []string
		want  []string
	}{
		{"bad last line", []string{`{"command":"true","timeout":"-1s"}`}, []string{"line 25001", "timeout"}},
		{"duplicate in a later chunk", []string{`{"id":"j3","command":"true"}`}, []string{"line 25001", `"j3"`, "already exists"}},
		{"after an unknown job", []string{`{"id":"x","command":"true","after":["j3","nope"]}`}, []string{"line 25001", `"x"`, `"nope"`}},
		{"after a job later in the file", []string{`{"id":"x","command":"true","after":["y"]}`, `{"id":"y","command":"true"}`},
			[]string{"line 25001", `"y"`, "neither stored nor earlier in the file"}},
		{"line over the limit", []string{`{"command":"` + strings.Repeat("x", 16<<20) + `"}`, `{"command":"true"}`},
			[]string{"line 25001 is longer than the limit of 16 MiB"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			stdout, stderr, code := c.run("enqueue", "--file", writeJobs(t, 25_000, tc.extra...))
			if code != 2 || stdout != "" || strings.Count(strings.TrimSpace(stderr), "\n") != 0 {
				t.Fatalf("exit %d, stdout %d bytes, stderr %q", code, len(stdout), stderr)
			}
			for _, w := range tc.want {
				if !strings.Contains(stderr, w) {
					t.Errorf("stderr %q lacks %q", stderr, w)
				}
			}
			if n := len(c.list("")); n != 0 {
				t.Fatalf("a rejected file stored %d jobs", n)
			}
		})
	}
	// The same file without the bad line goes in whole, from standard
	// input too (read twice through a temporary copy).
	path := writeJobs(t, 25_000)
	cmd := c.cmd("enqueue", "--file", "-")
	in, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	cmd.Stdin = in
	stdout, stderr, code := runProcess(t, cmd)
	if ids := strings.Fields(stdout); code != 0 || len(ids) != 25_000 || ids[0] != "j0" || ids[24_999] != "j24999" {
		t.Fatalf("enqueue --file -: exit %d, %d ids, stderr %q", code, len(ids), stderr)
	}
	if n := len(c.list("pending")); n != 25_000 {
		t.Fatalf("%d jobs pending, want 25000", n)
	}
}

// A file's jobs may run after stored jobs and jobs earlier in the file,
// and carry unique keys: a key held by a stored job, or by a job earlier
// in the file, adds nothing and prints the holder's id, with a note naming
// the line.
func TestE2EEnqueueFileAfterAndUniqueKey(t *testing.T) {
	c := newCLI(t)
	c.ok("enqueue", "--id", "stored", "--command", "true")
	c.ok("enqueue", "--id", "held", "--command", "true", "--unique-key", "k")
	path := filepath.Join(t.TempDir(), "jobs.jsonl")
	writeFile(t, path, `{"id":"a","command":"true"}
{"id":"b","command":"true","after":["a","stored"]}
{"id":"c","command":"true","unique_key":"k"}
{"id":"d","command":"true","unique_key":"n"}
{"id":"e","command":"true","unique_key":"n"}
`)
	stdout, stderr, code := c.run("enqueue", "--file", path)
	if code != 0 || strings.Join(strings.Fields(stdout), " ") != "a b held d d" {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
	for _, want := range []string{path + ` line 3: job held holds unique key "k"`, path + ` line 5: job d holds unique key "n"`} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr %q lacks %q", stderr, want)
		}
	}
	if j := c.job("b"); j.State != "waiting" {
		t.Fatalf("b: %s, want waiting", j.State)
	}
	for _, id := range []string{"c", "e"} {
		if _, _, code := c.run("show", id); code != 1 {
			t.Errorf("%s was stored (show exit %d)", id, code)
		}
	}
	c.ok("worker", "start")
	b := c.waitState("b", "completed", 30*time.Second)
	if a := c.job("a"); b.StartedAt == nil || a.History[0].FinishedAt.After(*b.StartedAt) {
		t.Fatalf("b started at %v, before a finished at %v", b.StartedAt, a.History[0].FinishedAt)
	}
}
