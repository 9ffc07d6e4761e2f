package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
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
// duplicate id (of a stored job, of a job in an earlier chunk or in the
// same chunk) or a line over the limit store nothing, and each fails with
// one line naming its line. On SQLite a first pass checks the file before
// anything is staged; on PostgreSQL the file is read once and a bad line
// rolls the import's transaction back, and a taken id is found by the
// COPY of its chunk, in the background of the next chunk's reading.
func TestE2EEnqueueFileAllOrNothing(t *testing.T) {
	var more []string // lines 15002 to 25001 after 15,001 lines
	for i := range 10_000 {
		more = append(more, fmt.Sprintf(`{"id":"k%d","command":"true"}`, i))
	}
	tests := []struct {
		name  string
		n     int // jobs j0… before the extra lines
		extra []string
		want  []string
	}{
		{"bad last line", 25_000, []string{`{"command":"true","timeout":"-1s"}`}, []string{"line 25001", "timeout"}},
		{"duplicate in the last chunk", 25_000, []string{`{"id":"j3","command":"true"}`}, []string{"line 25001", `"j3"`, "already exists"}},
		{"duplicate in a middle chunk", 15_000, append([]string{`{"id":"j3","command":"true"}`}, more...), []string{"line 15001", `"j3"`, "already exists"}},
		// The first of two: the next chunk, where the second is, is in hand
		// when PostgreSQL reports the copy of the first's.
		{"duplicate in a middle chunk and the next", 15_000, append(append([]string{`{"id":"j3","command":"true"}`}, more...), `{"id":"j3","command":"true"}`),
			[]string{"line 15001", `"j3"`, "already exists"}},
		{"duplicate within a chunk", 25_000, []string{`{"id":"j20001","command":"true"}`}, []string{"line 25001", `"j20001"`, "already exists"}},
		{"after an unknown job", 25_000, []string{`{"id":"x","command":"true","after":["j3","nope"]}`}, []string{"line 25001", `"x"`, `"nope"`}},
		// Found by its place among the ids printed: the file gave it none.
		{"a job without an id after an unknown job, in a middle chunk", 15_000,
			append([]string{`{"command":"true","after":["nope"]}`}, more...), []string{"line 15001", `"nope"`}},
		{"after each other", 25_000, []string{`{"id":"x","command":"true","after":["y"]}`, `{"id":"y","command":"true","after":["x"]}`},
			[]string{"line 25001", `"x" runs after "y" runs after "x"`, "wait for each other"}},
		{"line over the limit", 25_000, []string{`{"command":"` + strings.Repeat("x", 16<<20) + `"}`, `{"command":"true"}`},
			[]string{"line 25001 is longer than the limit of 16 MiB"}},
	}
	for _, store := range []string{"sqlite", "postgres"} {
		t.Run(store, func(t *testing.T) {
			c := newCLI(t)
			if store == "postgres" {
				_, c.db = newPGSchema(t)
			}
			for _, tc := range tests {
				t.Run(tc.name, func(t *testing.T) {
					stdout, stderr, code := c.run("enqueue", "--file", writeJobs(t, tc.n, tc.extra...))
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
			// The same file without the bad line goes in whole, from
			// standard input too (on SQLite read twice through a temporary
			// copy).
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
		})
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
{"id":"f","command":"true","after":["c","e"]}
`)
	stdout, stderr, code := c.run("enqueue", "--file", path)
	if code != 0 || strings.Join(strings.Fields(stdout), " ") != "a b held d d f" {
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
	// f runs after the jobs not added, c and e: after their holders.
	if j := c.job("f"); j.State != "waiting" || strings.Join(j.After, " ") != "d held" {
		t.Fatalf("f: %s after %v, want waiting after held and d", j.State, j.After)
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

// A file read from a pipe is read whole (and copied aside) before the
// import's transaction begins, on PostgreSQL too: a slow writer must not
// hold a transaction open, which would hold a pool connection and the
// database's vacuum back for as long as it writes.
func TestE2EEnqueueFileFromAPipeHoldsNoTransaction(t *testing.T) {
	c := newCLI(t)
	schema, db := newPGSchema(t)
	c.db = db
	c.ok("migrate")
	cmd := c.cmd("enqueue", "--file", "-")
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	var out, errb strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// 15,000 lines: more than a pipe holds, so once written the process
	// has read well past the first chunk of 10,000.
	var lines strings.Builder
	for i := range 15_000 {
		fmt.Fprintf(&lines, `{"id":"p%d","command":"true"}`+"\n", i)
	}
	if _, err := in.Write([]byte(lines.String())); err != nil {
		t.Fatal(err)
	}
	n, err := pgTestQueryInt(pgBaseURL(t), `SELECT count(*) FROM pg_stat_activity WHERE application_name = $1 AND xact_start IS NOT NULL`, schema)
	if err != nil || n != 0 {
		t.Errorf("sessions in a transaction while the input is still being written: %d %v, want none", n, err)
	}
	in.Close()
	if err := cmd.Wait(); err != nil {
		t.Fatalf("enqueue --file -: %v: %s", err, errb.String())
	}
	if ids := strings.Fields(out.String()); len(ids) != 15_000 || ids[14_999] != "p14999" {
		t.Fatalf("enqueue --file -: %d ids", len(ids))
	}
}

// A file that starts with a UTF-8 byte order mark, as some editors save
// it, is read as without one: as JSON Lines and as a JSON array.
func TestE2EEnqueueFileWithByteOrderMark(t *testing.T) {
	c := newCLI(t)
	dir := t.TempDir()
	for name, body := range map[string]string{
		"lines.jsonl": "\ufeff{\"id\":\"l1\",\"command\":\"true\"}\n{\"id\":\"l2\",\"command\":\"true\"}\n",
		"array.json":  "\ufeff[{\"id\":\"a1\",\"command\":\"true\"}]\n",
	} {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		c.ok("enqueue", "--file", path)
	}
	for _, id := range []string{"l1", "l2", "a1"} {
		if j := c.job(id); j.State != "pending" {
			t.Fatalf("job %s: %+v", id, j)
		}
	}
}

// list --json prints the newest first, so a copy of jobs with after lists
// a job before the jobs it runs after: the import takes it as it is.
func TestE2EEnqueueFileOfListJSONWithAfter(t *testing.T) {
	c := newCLI(t)
	c.ok("enqueue", "--id", "a", "--command", "true")
	c.ok("enqueue", "--id", "b", "--command", "true", "--after", "a")
	c.ok("enqueue", "--id", "c", "--command", "true", "--after", "b", "--after", "a")
	file := filepath.Join(c.home, "jobs.json")
	writeFile(t, file, c.ok("list", "--json", "--limit", "0"))
	c.db = filepath.Join(c.home, "other.db")
	if out, errOut, code := c.run("enqueue", "--file", file); code != 0 || out != "c\nb\na\n" {
		t.Fatalf("enqueue --file of list --json: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	for id, want := range map[string]string{"a": "pending ", "b": "waiting a", "c": "waiting a b"} {
		if j := c.job(id); j.State+" "+strings.Join(j.After, " ") != want {
			t.Errorf("%s: %s after %v, want %s", id, j.State, j.After, want)
		}
	}
}

// A file read from a pipe that names a job it never holds is refused once
// the import commits, naming its line from the copy of what the pipe gave,
// without reading the pipe again (which would wait for a writer for ever).
// Standard input too.
func TestE2EEnqueueFileFromAPipeNamingAMissingJob(t *testing.T) {
	c := newCLI(t)
	fifo := filepath.Join(t.TempDir(), "jobs.fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	go func() {
		f, err := os.OpenFile(fifo, os.O_WRONLY, 0)
		if err != nil {
			return
		}
		f.WriteString(`{"id":"ok","command":"true"}` + "\n" + `{"id":"a","command":"true","after":["later"]}` + "\n")
		f.Close()
	}()
	cmd := c.cmd("enqueue", "--file", fifo)
	timer := time.AfterFunc(20*time.Second, func() { cmd.Process.Kill() })
	_, errOut, code := runProcess(t, cmd)
	if !timer.Stop() {
		t.Fatal("the import of a pipe hung after its commit was refused")
	}
	if code != 2 || !strings.Contains(errOut, fifo+" line 2:") || !strings.Contains(errOut, `job "a"`) ||
		!strings.Contains(errOut, `no job "later"`) {
		t.Fatalf("exit %d, stderr %q", code, errOut)
	}

	cmd = c.cmd("enqueue", "--file", "-")
	cmd.Stdin = strings.NewReader(`[{"command":"true"}, {"command":"true","after":["never"]}]`)
	_, errOut, code = runProcess(t, cmd)
	if code != 2 || !strings.Contains(errOut, "- item 2:") || !strings.Contains(errOut, `no job "never"`) {
		t.Fatalf("standard input: exit %d, stderr %q", code, errOut)
	}
	if out := c.ok("list", "--json"); strings.TrimSpace(out) != "[]" {
		t.Fatalf("a refused import stored jobs: %s", out)
	}
}

// Two PostgreSQL transactions that take the same unique keys in opposite
// orders deadlock, and the server rolls one back. When that one is an
// import, enqueue --file makes it again from the start of the file, read
// from a file or from standard input, and succeeds: its jobs come after
// the other transaction's, which holds their keys, and a note says it was
// made again.
func TestE2EEnqueueFileMadeAgainAfterADeadlock(t *testing.T) {
	c := newCLI(t)
	schema, db := newPGSchema(t)
	c.db = db
	for _, from := range []string{"file", "stdin"} {
		t.Run(from, func(t *testing.T) {
			h1, h2, k1, k2 := from+"-h1", from+"-h2", from+"-k1", from+"-k2"
			c.ok("enqueue", "--id", h1, "--command", "true")
			c.ok("enqueue", "--id", h2, "--command", "true")
			ctx := context.Background()
			conn, err := pgx.Connect(ctx, pgBaseURL(t))
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close(ctx)
			other, err := conn.Begin(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer other.Rollback(ctx)
			// The other transaction looks for a deadlock long after the
			// import does: the import is the one rolled back.
			if _, err := other.Exec(ctx, `SET LOCAL deadlock_timeout = '60s'`); err != nil {
				t.Fatal(err)
			}
			if _, err := other.Exec(ctx, `UPDATE `+schema+`.jobs SET unique_key = $1 WHERE id = $2`, k2, h2); err != nil {
				t.Fatal(err)
			}
			jobs := fmt.Sprintf(`{"id":"%s-m1","command":"true","unique_key":"%s"}`+"\n"+
				`{"id":"%s-m2","command":"true","unique_key":"%s"}`+"\n", from, k1, from, k2)
			cmd := c.cmd("enqueue", "--file", "-")
			if from == "file" {
				path := filepath.Join(t.TempDir(), "jobs.jsonl")
				writeFile(t, path, jobs)
				cmd = c.cmd("enqueue", "--file", path)
			} else {
				cmd.Stdin = strings.NewReader(jobs)
			}
			var out, errb strings.Builder
			cmd.Stdout, cmd.Stderr = &out, &errb
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			watch, err := pgx.Connect(ctx, pgBaseURL(t))
			if err != nil {
				t.Fatal(err)
			}
			defer watch.Close(ctx)
			waitFor(t, "the import to wait for "+k2, 30*time.Second, func() bool {
				var n int
				err := watch.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity
					WHERE application_name = $1 AND wait_event_type = 'Lock'`, schema).Scan(&n)
				return err == nil && n > 0
			})
			// k1, which the import holds: a deadlock, which the import
			// finds once it has waited for deadlock_timeout (1 s by
			// default), well after this.
			if _, err := other.Exec(ctx, `UPDATE `+schema+`.jobs SET unique_key = $1 WHERE id = $2`, k1, h1); err != nil {
				t.Fatalf("the other transaction: %v", err)
			}
			if err := other.Commit(ctx); err != nil {
				t.Fatal(err)
			}
			if err := cmd.Wait(); err != nil {
				t.Fatalf("enqueue --file: %v: %s", err, errb.String())
			}
			if got := strings.Fields(out.String()); len(got) != 2 || got[0] != h1 || got[1] != h2 {
				t.Fatalf("printed %q; want the holders %s and %s", got, h1, h2)
			}
			name := "standard input"
			if from == "file" {
				name = "jobs.jsonl"
			}
			if !strings.Contains(errb.String(), "deadlock detected") || !strings.Contains(errb.String(), name+" again once other imports end (attempt 2 of 3)") {
				t.Fatalf("stderr %q; want a note that the import was made again after a deadlock", errb.String())
			}
			if _, _, code := c.run("show", from+"-m1"); code == 0 {
				t.Fatalf("%s-m1 was stored; its key is held", from)
			}
		})
	}
}
