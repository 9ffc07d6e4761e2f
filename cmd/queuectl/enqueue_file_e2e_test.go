package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
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
