package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"
)

// qctl runs the binary against one database: a home's SQLite file, or a
// PostgreSQL schema as one host (pgHost).
type qctl interface {
	cmd(args ...string) *exec.Cmd
	run(args ...string) (string, string, int)
	ok(args ...string) string
}

// onBothStores runs fn against SQLite and against PostgreSQL; on
// PostgreSQL, other is a second host sharing the database (on SQLite, the
// same home).
func onBothStores(t *testing.T, fn func(t *testing.T, q, other qctl)) {
	t.Run("sqlite", func(t *testing.T) {
		c := newCLI(t)
		fn(t, c, c)
	})
	t.Run("postgres", func(t *testing.T) {
		_, db := newPGSchema(t)
		fn(t, newPGHost(t, db, "host-a"), newPGHost(t, db, "host-b"))
	})
}

// stateOf is a job's state as show --json prints it.
func stateOf(t *testing.T, q qctl, id string) jobView {
	t.Helper()
	var j jobView
	if err := json.Unmarshal([]byte(q.ok("show", id, "--json")), &j); err != nil {
		t.Fatalf("show %s: %v", id, err)
	}
	return j
}

// gateCommand prints "started", waits until file exists, prints "done":
// the test decides when the job ends.
func gateCommand(file string) string {
	return fmt.Sprintf(`echo started; while [ ! -e %q ]; do sleep 0.02; done; echo done`, file)
}

func TestE2EFollowAndWait(t *testing.T) {
	onBothStores(t, func(t *testing.T, q, other qctl) {
		q.ok("worker", "start", "--concurrency", "3")
		gate := filepath.Join(t.TempDir(), "gate")
		id := strings.TrimSpace(q.ok("enqueue", "--command", gateCommand(gate), "--max-retries", "0"))

		// Another process (on PostgreSQL: another host) follows and waits.
		follow := other.cmd("output", "-f", id)
		stdout, err := follow.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := follow.Start(); err != nil {
			t.Fatal(err)
		}
		wait := other.cmd("wait", id, "--json")
		var waitOut strings.Builder
		wait.Stdout = &waitOut
		if err := wait.Start(); err != nil {
			t.Fatal(err)
		}
		lines := bufio.NewReader(stdout)
		first, err := lines.ReadString('\n')
		if err != nil || first != "started\n" {
			t.Fatalf("follower's first line = %q, %v; want the live \"started\"", first, err)
		}
		// The job is still running: its output reached the follower live.
		if j := stateOf(t, q, id); j.State != "processing" {
			t.Fatalf("job is %s while its output was followed; want processing", j.State)
		}
		if err := os.WriteFile(gate, nil, 0o600); err != nil {
			t.Fatal(err)
		}
		rest, _ := io.ReadAll(lines)
		if err := follow.Wait(); err != nil || string(rest) != "done\n" {
			t.Fatalf("follower ended with %q, %v; want \"done\\n\" and exit 0", rest, err)
		}
		if err := wait.Wait(); err != nil {
			t.Fatalf("wait: %v", err)
		}
		var jobs []jobView
		if err := json.Unmarshal([]byte(waitOut.String()), &jobs); err != nil || len(jobs) != 1 || jobs[0].State != "completed" {
			t.Fatalf("wait --json = %s (%v); want the completed job", waitOut.String(), err)
		}
		// A finished job: output -f prints it and exits.
		if out := other.ok("output", "-f", id); out != "started\ndone\n" {
			t.Fatalf("output -f of a finished job = %q", out)
		}

		failing := strings.TrimSpace(q.ok("enqueue", "--command", "echo oops; exit 7", "--max-retries", "0"))
		if _, _, code := other.run("wait", id, failing); code != 1 {
			t.Fatalf("wait with a dead job: exit %d, want 1", code)
		}
		if _, errOut, code := other.run("wait", id, "no-such-job"); code != 2 || !strings.Contains(errOut, "no-such-job") {
			t.Fatalf("wait with an unknown id: exit %d (%s), want 2 naming it", code, errOut)
		}
		blocked := strings.TrimSpace(q.ok("enqueue", "--command", gateCommand(gate+"-never")))
		if _, _, code := other.run("wait", "--timeout", "300ms", blocked); code != 124 {
			t.Fatalf("wait --timeout on a running job: exit %d, want 124", code)
		}
		q.ok("cancel", blocked)

		// enqueue --wait: the job's output on stdout, its exit code.
		out, _, code := other.run("enqueue", "--command", "echo hello; exit 3", "--max-retries", "0", "--wait")
		if out != "hello\n" || code != 3 {
			t.Fatalf("enqueue --wait = %q, exit %d; want \"hello\\n\", exit 3", out, code)
		}
		out, _, code = other.run("enqueue", "--command", "echo one; echo two", "--wait", "--follow")
		if out != "one\ntwo\n" || code != 0 {
			t.Fatalf("enqueue --wait --follow = %q, exit %d; want both lines, exit 0", out, code)
		}
	})
}

// jobTimes reads the "S <ns>" and "E <ns>" lines jobs appended to file and
// returns the most jobs that ran at once.
func maxOverlap(t *testing.T, file string, want int) int {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	type ev struct {
		at    int64
		delta int
	}
	var evs []ev
	starts := 0
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		kind, ns, _ := strings.Cut(line, " ")
		at, err := strconv.ParseInt(ns, 10, 64)
		if err != nil {
			t.Fatalf("bad line %q", line)
		}
		d := 1
		if kind == "E" {
			d = -1
		} else {
			starts++
		}
		evs = append(evs, ev{at, d})
	}
	if starts != want {
		t.Fatalf("%d jobs started, want %d", starts, want)
	}
	// An end and a start at the same instant do not overlap.
	sort.Slice(evs, func(a, b int) bool {
		if evs[a].at != evs[b].at {
			return evs[a].at < evs[b].at
		}
		return evs[a].delta < evs[b].delta
	})
	n, most := 0, 0
	for _, e := range evs {
		n += e.delta
		most = max(most, n)
	}
	return most
}

func TestE2EMaxRunningAcrossWorkerProcesses(t *testing.T) {
	onBothStores(t, func(t *testing.T, q, other qctl) {
		const jobs, limit = 16, 2
		times := filepath.Join(t.TempDir(), "times")
		q.ok("queue", "set", "m", "--max-running", strconv.Itoa(limit))
		for range jobs {
			q.ok("enqueue", "--queue", "m", "--command",
				fmt.Sprintf(`echo "S $(date +%%s%%N)" >> %[1]q; sleep 0.15; echo "E $(date +%%s%%N)" >> %[1]q`, times))
		}
		// Three processes on one host and, on PostgreSQL, two on another,
		// each with room for more jobs than the limit.
		q.ok("worker", "start", "-n", "3", "--concurrency", "3")
		if other != q {
			other.ok("worker", "start", "-n", "2", "--concurrency", "3")
		}
		waitFor(t, "every job completed", 60*time.Second, func() bool {
			var s struct {
				Jobs map[string]int `json:"jobs"`
			}
			json.Unmarshal([]byte(q.ok("status", "--json")), &s)
			return s.Jobs["completed"] == jobs
		})
		if most := maxOverlap(t, times, jobs); most > limit {
			t.Fatalf("%d jobs of the queue ran at once; max_running is %d", most, limit)
		}
	})
}

// TestE2EPauseRacesClaims pauses a queue while workers claim from it: no
// job may start after the pause command returned, jobs already running
// finish, and a resume lets the rest run.
func TestE2EPauseRacesClaims(t *testing.T) {
	onBothStores(t, func(t *testing.T, q, other qctl) {
		const jobs = 60
		var b strings.Builder
		for i := range jobs {
			fmt.Fprintf(&b, `{"id":"p%03d","queue":"p","command":"sleep 0.05"}`+"\n", i)
		}
		file := filepath.Join(t.TempDir(), "jobs.jsonl")
		if err := os.WriteFile(file, []byte(b.String()), 0o600); err != nil {
			t.Fatal(err)
		}
		q.ok("enqueue", "--file", file)
		q.ok("worker", "start", "-n", "2", "--concurrency", "2")
		waitFor(t, "a few jobs completed", 30*time.Second, func() bool {
			return strings.Contains(q.ok("list", "--state", "completed", "--queue", "p"), "p0")
		})
		other.ok("queue", "pause", "p")
		paused := time.Now()
		waitFor(t, "no job of p running", 30*time.Second, func() bool {
			var running []jobView
			json.Unmarshal([]byte(q.ok("list", "--json", "--state", "processing", "--queue", "p")), &running)
			return len(running) == 0
		})
		var listed []jobView
		if err := json.Unmarshal([]byte(q.ok("list", "--json", "--limit", "0", "--queue", "p")), &listed); err != nil {
			t.Fatal(err)
		}
		pending := 0
		for _, j := range listed {
			if j.StartedAt != nil && j.StartedAt.After(paused) {
				t.Fatalf("job %s started at %s, after the pause returned at %s", j.ID, j.StartedAt, paused)
			}
			if j.State == "pending" {
				pending++
			}
		}
		if pending == 0 {
			t.Fatal("every job ran: the pause came too late to test anything")
		}
		if !strings.Contains(q.ok("status"), "paused queues: p") {
			t.Fatal("status does not show the paused queue")
		}
		other.ok("queue", "resume", "p")
		waitFor(t, "every job completed after resume", 60*time.Second, func() bool {
			var s struct {
				Jobs map[string]int `json:"jobs"`
			}
			json.Unmarshal([]byte(q.ok("status", "--json")), &s)
			return s.Jobs["completed"] == jobs
		})
	})
}

func TestE2EOperatorBadInput(t *testing.T) {
	c := newCLI(t)
	id := strings.TrimSpace(c.ok("enqueue", "--command", "true"))
	for _, args := range [][]string{
		{"queue", "set", "q", "--rate-limit", "fast"},
		{"queue", "set", "q", "--max-running", "-1"},
		{"queue", "set", "q"},
		{"queue", "pause"},
		{"queue", "pause", "bad name"},
		{"wait", id, "--timeout", "soon"},
		{"wait"},
		{"enqueue", "--command", "true", "--follow"},
		{"output", "-f", id, "--attempt", "1"},
		{"worker", "start", "--concurrency", "0"},
	} {
		out, errOut, code := c.run(args...)
		if code != 2 || out != "" || strings.Count(strings.TrimSpace(errOut), "\n") != 0 {
			t.Errorf("queuectl %s: exit %d, stdout %q, stderr %q; want exit 2 and one line", strings.Join(args, " "), code, out, errOut)
		}
	}
	if out := c.ok("queue", "list", "--json"); strings.Contains(out, `"paused": true`) || strings.Contains(out, `"name": "q"`) {
		t.Errorf("refused commands changed the queues: %s", out)
	}
	if n := len(c.list("")); n != 1 {
		t.Errorf("%d jobs after refused commands, want 1", n)
	}
}

// Refusals name the command and say what is wrong once; cleanup takes
// several states; a queue given twice to worker start is claimed once.
func TestE2EOperatorMessages(t *testing.T) {
	c := newCLI(t)
	c.ok("migrate")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"queue", "set", "q", "--rate-limit", "fast"}, `queuectl: queue set: --rate-limit: invalid rate limit "fast": use COUNT/PERIOD`},
		{[]string{"cleanup", "--older-than", "99999d"}, `queuectl: cleanup: --older-than: invalid: duration "99999d" is longer than 36500d`},
		{[]string{"cleanup", "--older-than", "-1d"}, `queuectl: cleanup: --older-than: invalid: duration "-1d" is negative`},
	} {
		if _, errOut, code := c.run(tc.args...); code != 2 || !strings.HasPrefix(errOut, tc.want) {
			t.Errorf("queuectl %s: exit %d, stderr %q; want exit 2 and %q", strings.Join(tc.args, " "), code, errOut, tc.want)
		}
	}
	c.ok("enqueue", "--id", "done", "--command", "true")
	c.ok("enqueue", "--id", "gone", "--command", "true")
	c.ok("cancel", "gone")
	c.ok("enqueue", "--id", "bad", "--command", "false", "--max-retries", "0")
	c.ok("worker", "start", "--queue", "default", "--queue", "default")
	var ws []struct {
		Queues []string `json:"queues"`
	}
	if err := json.Unmarshal([]byte(c.ok("worker", "list", "--json")), &ws); err != nil || len(ws) != 1 || strings.Join(ws[0].Queues, ",") != "default" {
		t.Errorf("worker --queue default --queue default: %+v %v", ws, err)
	}
	c.waitState("bad", "dead", 20*time.Second)
	c.waitState("done", "completed", 20*time.Second)
	if out := c.ok("cleanup", "--older-than", "0", "--state", "dead", "--state", "cancelled", "--dry-run"); out != "would delete 2 job(s)\n" {
		t.Errorf("cleanup --state dead --state cancelled: %q, want the dead and the cancelled job", out)
	}
}
