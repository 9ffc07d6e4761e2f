package main

// End-to-end tests of the built queuectl binary, each with its own
// temporary QUEUECTL_HOME.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/queuectl/queuectl/internal/proc"
	"github.com/queuectl/queuectl/internal/testutil/syncbuf"
	"github.com/queuectl/queuectl/queue"
	"github.com/queuectl/queuectl/queue/sqlite"
)

var binary string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "queuectl-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binary = filepath.Join(dir, "queuectl")
	build := exec.Command("go", "build", "-o", binary, ".")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "build queuectl:", err)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// cli runs the binary against one temporary home.
type cli struct {
	t    *testing.T
	home string
	db   string // $QUEUECTL_DB: "" for the home's SQLite file
}

func newCLI(t *testing.T) *cli {
	t.Helper()
	c := &cli{t: t, home: t.TempDir()}
	t.Cleanup(func() {
		// Never leave workers behind, whatever the test did.
		c.run("worker", "stop", "--timeout", "1s")
	})
	return c
}

func (c *cli) cmd(args ...string) *exec.Cmd {
	cmd := exec.Command(binary, args...)
	cmd.Env = append(os.Environ(), "QUEUECTL_HOME="+c.home, "QUEUECTL_DB="+c.db)
	cmd.Dir = c.home
	return cmd
}

// run returns stdout, stderr and the exit code.
func (c *cli) run(args ...string) (string, string, int) {
	c.t.Helper()
	return runProcess(c.t, c.cmd(args...))
}

// runProcess runs cmd and returns stdout, stderr and the exit code.
func runProcess(t *testing.T, cmd *exec.Cmd) (string, string, int) {
	t.Helper()
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("run %v: %v", cmd.Args, err)
	}
	return out.String(), errb.String(), code
}

func (c *cli) ok(args ...string) string {
	c.t.Helper()
	out, errOut, code := c.run(args...)
	if code != 0 {
		c.t.Fatalf("queuectl %s: exit %d: %s", strings.Join(args, " "), code, errOut)
	}
	return out
}

type jobView struct {
	ID         string     `json:"id"`
	Queue      string     `json:"queue"`
	State      string     `json:"state"`
	Priority   int        `json:"priority"`
	Attempts   int        `json:"attempts"`
	MaxRetries int        `json:"max_retries"`
	Timeout    *float64   `json:"timeout"`
	RunAt      time.Time  `json:"run_at"`
	CreatedAt  time.Time  `json:"created_at"`
	StartedAt  *time.Time `json:"started_at"`
	ExitCode   *int       `json:"exit_code"`
	Error      *string    `json:"error"`
	After      []string   `json:"after"`
	History    []struct {
		Attempt    int       `json:"attempt"`
		StartedAt  time.Time `json:"started_at"`
		FinishedAt time.Time `json:"finished_at"`
		ExitCode   *int      `json:"exit_code"`
		Signal     *string   `json:"signal"`
		Outcome    string    `json:"outcome"`
	} `json:"history"`
}

func (c *cli) job(id string) jobView {
	c.t.Helper()
	var j jobView
	if err := json.Unmarshal([]byte(c.ok("show", id, "--json")), &j); err != nil {
		c.t.Fatalf("show %s: %v", id, err)
	}
	return j
}

func (c *cli) list(state string) []jobView {
	c.t.Helper()
	args := []string{"list", "--json", "--limit", "0"}
	if state != "" {
		args = append(args, "--state", state)
	}
	var js []jobView
	if err := json.Unmarshal([]byte(c.ok(args...)), &js); err != nil {
		c.t.Fatalf("list: %v", err)
	}
	return js
}

// waitFor polls cond until it holds or the deadline passes.
func waitFor(t *testing.T, what string, timeout time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", timeout, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func (c *cli) waitState(id, state string, timeout time.Duration) jobView {
	c.t.Helper()
	var j jobView
	waitFor(c.t, id+" to be "+state, timeout, func() bool {
		j = c.job(id)
		return j.State == state
	})
	return j
}

func (c *cli) waitAll(state string, n int, timeout time.Duration) {
	c.t.Helper()
	waitFor(c.t, fmt.Sprintf("%d jobs %s", n, state), timeout, func() bool {
		var s struct {
			Jobs map[string]int `json:"jobs"`
		}
		json.Unmarshal([]byte(c.ok("status", "--json")), &s)
		return s.Jobs[state] == n
	})
}

func TestE2EJobCompletes(t *testing.T) {
	c := newCLI(t)
	if got := c.ok("enqueue", `{"id":"job1","command":"echo hello"}`); got != "job1\n" {
		t.Fatalf("enqueue printed %q", got)
	}
	pids := strings.Fields(c.ok("worker", "start"))
	if len(pids) != 1 {
		t.Fatalf("worker start printed %v", pids)
	}
	j := c.waitState("job1", "completed", 20*time.Second)
	if j.ExitCode == nil || *j.ExitCode != 0 || len(j.History) != 1 || j.History[0].Outcome != "succeeded" {
		t.Fatalf("completed job: %+v", j)
	}
	if out := c.ok("output", "job1"); out != "hello\n" {
		t.Fatalf("output = %q", out)
	}
	// The worker logs JSON through its rotating log file.
	b, err := os.ReadFile(filepath.Join(c.home, "logs", "worker-"+pids[0]+".log"))
	if err != nil || !strings.Contains(string(b), `"message":"worker starting"`) {
		t.Fatalf("worker log: %v\n%s", err, b)
	}
	// Its one slot runs Go code on one thread.
	if os.Getenv("GOMAXPROCS") == "" && !strings.Contains(string(b), `"gomaxprocs":1,`) {
		t.Fatalf("a worker with one slot does not run with GOMAXPROCS 1:\n%s", b)
	}
}

func TestE2ERetryBackoffAndDLQ(t *testing.T) {
	c := newCLI(t)
	c.ok("config", "set", "backoff_base", "1.5")
	c.ok("enqueue", "--id", "flaky", "--command", "echo try $QUEUECTL_ATTEMPT; exit 4", "--max-retries", "2")
	c.ok("worker", "start", "--count", "2")
	j := c.waitState("flaky", "dead", 30*time.Second)
	if len(j.History) != 3 || j.Attempts != 3 || j.Error == nil || *j.Error != "exit status 4" {
		t.Fatalf("dead job: %+v", j)
	}
	// After the n-th failure the job waits 1.5^n seconds: 1.5s, then 2.25s.
	for n, want := range map[int]time.Duration{1: 1500 * time.Millisecond, 2: 2250 * time.Millisecond} {
		gap := j.History[n].StartedAt.Sub(j.History[n-1].FinishedAt)
		if gap < want || gap > want+1500*time.Millisecond {
			t.Errorf("wait after failure %d: %s, want %s (+ pick-up time)", n, gap, want)
		}
	}
	var dead []jobView
	json.Unmarshal([]byte(c.ok("dlq", "list", "--json")), &dead)
	if len(dead) != 1 || dead[0].ID != "flaky" {
		t.Fatalf("dlq list: %+v", dead)
	}
	c.ok("worker", "stop")
	if got := c.ok("dlq", "retry", "flaky"); got != "flaky\n" {
		t.Fatalf("dlq retry printed %q", got)
	}
	if j := c.job("flaky"); j.State != "pending" || j.Attempts != 0 {
		t.Fatalf("retried job: state %s attempts %d", j.State, j.Attempts)
	}
	if out := c.ok("output", "flaky", "--attempt", "2"); out != "try 2\n" {
		t.Fatalf("output of attempt 2: %q", out)
	}
}

// A dead job retried by hand numbers its attempts from 1 again: --attempt
// 1 names the latest attempt 1, --nth names each attempt by its place in
// the history, and wrong --nth values are refused.
func TestE2EOutputOfEachLife(t *testing.T) {
	c := newCLI(t)
	lives := filepath.Join(c.home, "lives")
	c.ok("enqueue", "--id", "twice", "--max-retries", "0", "--command", "echo x >> "+lives+"; echo life $(wc -l < "+lives+"); exit 4")
	c.ok("worker", "start")
	c.waitState("twice", "dead", 30*time.Second)
	c.ok("dlq", "retry", "twice")
	waitFor(t, "the retried job to die again", 30*time.Second, func() bool {
		j := c.job("twice")
		return j.State == "dead" && len(j.History) == 2
	})
	c.ok("worker", "stop")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--nth", "1"}, "life 1\n"},
		{[]string{"--nth", "2"}, "life 2\n"},
		{[]string{"--attempt", "1"}, "life 2\n"},
		{nil, "life 2\n"},
	} {
		if out := c.ok(append([]string{"output", "twice"}, tc.args...)...); out != tc.want {
			t.Errorf("output %v: %q, want %q", tc.args, out, tc.want)
		}
	}
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"--nth", "3"}, 1, "no attempt #3"},
		{[]string{"--nth", "-1"}, 2, "--nth -1"},
		{[]string{"--nth", "1", "--attempt", "1"}, 2, "give one"},
		{[]string{"--nth", "1", "-f"}, 2, "--follow"},
	} {
		_, errOut, code := c.run(append([]string{"output", "twice"}, tc.args...)...)
		if code != tc.code || !strings.Contains(errOut, tc.want) || strings.Count(strings.TrimSpace(errOut), "\n") != 0 {
			t.Errorf("output %v: exit %d %q, want exit %d naming %q on one line", tc.args, code, errOut, tc.code, tc.want)
		}
	}
}

// appendIDCommand makes each job append its id to one file (O_APPEND
// writes of a short line are atomic), the side effect that proves it ran.
func appendIDCommand(file string) string {
	return fmt.Sprintf(`echo "$QUEUECTL_JOB_ID" >> %s`, file)
}

func checkRanOnce(t *testing.T, file string, n int) {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]int{}
	for _, id := range strings.Fields(string(b)) {
		seen[id]++
	}
	for id, k := range seen {
		if k != 1 {
			t.Errorf("job %s ran %d times", id, k)
		}
	}
	if len(seen) != n {
		t.Fatalf("%d distinct jobs ran, want %d", len(seen), n)
	}
}

func enqueueMany(t *testing.T, c *cli, n int, command string) {
	t.Helper()
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, `{"id":"j%04d","command":%q}`+"\n", i, command)
	}
	path := filepath.Join(t.TempDir(), "jobs.jsonl")
	os.WriteFile(path, []byte(b.String()), 0o644)
	if ids := strings.Fields(c.ok("enqueue", "--file", path)); len(ids) != n {
		t.Fatalf("enqueued %d jobs, want %d", len(ids), n)
	}
}

func TestE2EWorkersShareJobsExactlyOnce(t *testing.T) {
	c := newCLI(t)
	side := filepath.Join(c.home, "ran.txt")
	enqueueMany(t, c, 500, appendIDCommand(side))
	c.ok("worker", "start", "--count", "4")
	c.waitAll("completed", 500, 120*time.Second)
	checkRanOnce(t, side, 500)
}

// Many OS processes claiming 2,000 jobs at once on one SQLite file: every
// job runs exactly once, none is lost, and no SQLITE_BUSY surfaces.
func TestE2EManyProcessesClaim2000Jobs(t *testing.T) {
	if testing.Short() {
		t.Skip("long")
	}
	c := newCLI(t)
	side := filepath.Join(c.home, "ran.txt")
	enqueueMany(t, c, 2000, appendIDCommand(side))
	c.ok("worker", "start", "--count", "8")
	c.waitAll("completed", 2000, 300*time.Second)
	checkRanOnce(t, side, 2000)
	for _, j := range c.list("") {
		if j.Attempts != 1 {
			t.Errorf("job %s took %d attempts", j.ID, j.Attempts)
		}
	}
	c.ok("worker", "stop")
	logs, _ := filepath.Glob(filepath.Join(c.home, "logs", "*.log"))
	for _, l := range logs {
		b, _ := os.ReadFile(l)
		if bytes.Contains(b, []byte(`"level":"error"`)) || bytes.Contains(bytes.ToLower(b), []byte("busy")) {
			t.Errorf("%s reports errors:\n%s", l, b)
		}
	}
}

func TestE2ECommandNotFound(t *testing.T) {
	c := newCLI(t)
	c.ok("enqueue", `{"id":"missing","command":"no_such_command_xyz","max_retries":0,"priority":5}`)
	c.ok("enqueue", `{"id":"next","command":"echo next"}`)
	c.ok("worker", "start")
	j := c.waitState("missing", "dead", 20*time.Second)
	if j.ExitCode == nil || *j.ExitCode != 127 || j.Error == nil || !strings.Contains(*j.Error, "127") {
		t.Fatalf("missing command: %+v", j)
	}
	if out := c.ok("output", "missing"); !strings.Contains(out, "not found") {
		t.Fatalf("output should say the command was not found: %q", out)
	}
	c.waitState("next", "completed", 20*time.Second)
}

func TestE2EDataSurvivesRestart(t *testing.T) {
	c := newCLI(t)
	for i := range 5 {
		c.ok("enqueue", "--id", fmt.Sprintf("r%d", i), "--command", "true")
	}
	// A new process sees them all.
	if got := c.list("pending"); len(got) != 5 {
		t.Fatalf("pending after restart: %d", len(got))
	}
	c.ok("worker", "start")
	c.waitAll("completed", 5, 30*time.Second)
}

func TestE2EKilledWorkerJobIsRescued(t *testing.T) {
	c := newCLI(t)
	pidFile := filepath.Join(c.home, "pgid")
	// The first attempt records its process group and hangs; later ones finish.
	cmd := fmt.Sprintf(`if [ "$QUEUECTL_ATTEMPT" = 1 ]; then echo $$ > %s; sleep 60 & sleep 60; wait; fi; echo rescued`, pidFile)
	c.ok("enqueue", "--id", "victim", "--command", cmd)
	first := strings.TrimSpace(c.ok("worker", "start"))
	waitFor(t, "first attempt to start", 20*time.Second, func() bool {
		b, err := os.ReadFile(pidFile)
		return err == nil && len(bytes.TrimSpace(b)) > 0
	})
	b, _ := os.ReadFile(pidFile)
	pgid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	pid, _ := strconv.Atoi(first)
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	c.ok("worker", "start")
	j := c.waitState("victim", "completed", 30*time.Second)
	if len(j.History) != 2 || j.History[0].Outcome != "lost" || j.History[1].Outcome != "succeeded" {
		t.Fatalf("history: %+v", j.History)
	}
	if members, _ := proc.GroupMembers(pgid); len(members) != 0 {
		t.Fatalf("process group %d of the lost attempt still has %v", pgid, members)
	}
	if out := c.ok("output", "victim"); out != "rescued\n" {
		t.Fatalf("output %q", out)
	}
}

// A job that runs worker stop stops the other workers and asks its own,
// which waits for the job to end, rather than waiting for it: each would
// wait for the other for ever.
func TestE2EWorkerStopFromAJob(t *testing.T) {
	c := newCLI(t)
	c.ok("worker", "start", "--count", "2")
	c.ok("enqueue", "--id", "stopper", "--command", binary+" worker stop")
	c.waitState("stopper", "completed", 30*time.Second)
	out := c.ok("output", "stopper")
	if !strings.Contains(out, "stopped 1 worker(s)") || !strings.Contains(out, "runs this command") {
		t.Fatalf("worker stop in a job printed %q", out)
	}
	waitFor(t, "every worker to stop", 30*time.Second, func() bool {
		var ws []any
		json.Unmarshal([]byte(c.ok("worker", "list", "--json")), &ws)
		return len(ws) == 0
	})
}

func TestE2EWorkerStopLetsRunningJobFinish(t *testing.T) {
	c := newCLI(t)
	c.ok("enqueue", "--id", "slow", "--command", "sleep 1; echo finished")
	c.ok("worker", "start")
	c.waitState("slow", "processing", 20*time.Second)
	c.ok("worker", "stop")
	j := c.job("slow")
	if j.State != "completed" {
		t.Fatalf("after worker stop the running job should have finished, state %s", j.State)
	}
	var ws []any
	json.Unmarshal([]byte(c.ok("worker", "list", "--json")), &ws)
	if len(ws) != 0 {
		t.Fatalf("workers left registered: %v", ws)
	}
}

func TestE2EWorkerStopTimeoutPutsJobBack(t *testing.T) {
	c := newCLI(t)
	c.ok("enqueue", "--id", "long", "--command", "sleep 60")
	c.ok("worker", "start")
	c.waitState("long", "processing", 20*time.Second)
	c.ok("worker", "stop", "--timeout", "200ms")
	j := c.job("long")
	// Uncharged, but attempt 1 stays taken: the next run is attempt 2.
	if j.State != "pending" || j.Attempts != 1 || len(j.History) != 1 || j.History[0].Outcome != "interrupted" ||
		j.History[0].Attempt != 1 {
		t.Fatalf("an interrupted job goes back to pending uncharged: %+v", j)
	}
}

// A worker that the second signal of worker stop --timeout does not end,
// and that is not heard from (here stopped with SIGSTOP, as a hung one does
// not beat either), is killed with its running attempt's processes, not
// with the daemon a finished job of it left on purpose; the command returns
// naming it, and the next worker rescues the job as a lost attempt.
func TestE2EWorkerStopKillsAHungWorker(t *testing.T) {
	c := newCLI(t)
	pidFile, daemonFile := filepath.Join(c.home, "job.pid"), filepath.Join(c.home, "daemon.pid")
	c.ok("enqueue", "--id", "daemon", "--command", `setsid -f sh -c 'echo $$ >`+daemonFile+`; exec sleep 600'`)
	wpid, err := strconv.Atoi(strings.TrimSpace(c.ok("worker", "start", "--kill-grace", "100ms")))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { syscall.Kill(wpid, syscall.SIGKILL) })
	// readPID waits for the pid a job writes to file; the test kills it
	// at its end.
	readPID := func(file string) int {
		pid := 0
		waitFor(t, "the pid in "+filepath.Base(file), 10*time.Second, func() bool {
			b, _ := os.ReadFile(file)
			pid, _ = strconv.Atoi(strings.TrimSpace(string(b)))
			return pid > 0
		})
		t.Cleanup(func() { syscall.Kill(pid, syscall.SIGKILL) })
		return pid
	}
	c.waitState("daemon", "completed", 20*time.Second)
	dpid := readPID(daemonFile)
	c.ok("enqueue", "--id", "hung", "--command",
		`if [ "$QUEUECTL_ATTEMPT" = 1 ]; then echo $$ >`+pidFile+`; exec sleep 60; fi; echo again`)
	c.waitState("hung", "processing", 20*time.Second)
	jpid := readPID(pidFile)
	if err := syscall.Kill(wpid, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	cmd := c.cmd("worker", "stop", "--timeout", "300ms")
	timer := time.AfterFunc(2*time.Minute, func() { cmd.Process.Kill() })
	out, errOut, code := runProcess(t, cmd)
	if !timer.Stop() {
		t.Fatal("worker stop waited for a hung worker for over 2 minutes")
	}
	killed := fmt.Sprintf("killed worker %d (SIGKILL)", wpid)
	if code != 0 || out != "stopped 1 worker(s)\n" || !strings.Contains(errOut, killed) ||
		!strings.Contains(errOut, "killed 1 process(es) of its running jobs") {
		t.Fatalf("worker stop of a hung worker: exit %d, stdout %q, stderr %q; want 0, one stopped, %q", code, out, errOut, killed)
	}
	waitFor(t, "the worker and its attempt to go", 10*time.Second, func() bool {
		return !proc.Alive(wpid, 0) && !proc.Alive(jpid, 0)
	})
	if !proc.Alive(dpid, 0) {
		t.Fatal("the daemon a finished job left on purpose was killed")
	}
	c.ok("worker", "start")
	j := c.waitState("hung", "completed", 30*time.Second)
	if len(j.History) != 2 || j.History[0].Outcome != "lost" || j.History[1].Outcome != "succeeded" {
		t.Fatalf("the killed worker's job: %+v; want a lost attempt, then a succeeded one", j)
	}
}

func TestE2EPriorityOrderAndRunAt(t *testing.T) {
	c := newCLI(t)
	c.ok("enqueue", "--id", "low", "--command", "true", "--priority", "1")
	c.ok("enqueue", "--id", "high", "--command", "true", "--priority", "9")
	c.ok("enqueue", "--id", "mid", "--command", "true", "--priority", "5")
	c.ok("enqueue", "--id", "later", "--command", "true", "--priority", "100", "--run-at", "+2s")
	c.ok("worker", "start")
	c.waitAll("completed", 4, 30*time.Second)
	var order []jobView
	for _, id := range []string{"low", "high", "mid", "later"} {
		order = append(order, c.job(id))
	}
	sort.Slice(order, func(i, j int) bool { return order[i].StartedAt.Before(*order[j].StartedAt) })
	var got []string
	for _, j := range order {
		got = append(got, j.ID)
	}
	if strings.Join(got, ",") != "high,mid,low,later" {
		t.Fatalf("start order %v", got)
	}
	later := c.job("later")
	if later.StartedAt.Sub(later.CreatedAt) < 2*time.Second {
		t.Fatalf("run_at +2s job started after %s", later.StartedAt.Sub(later.CreatedAt))
	}
}

func TestE2ETimeoutKillsProcessTree(t *testing.T) {
	c := newCLI(t)
	pidFile := filepath.Join(c.home, "pgid")
	// A process that left the job's group (setsid) goes too.
	escaped := filepath.Join(c.home, "escaped")
	c.ok("enqueue", `{"id":"hang","command":"echo $$ > `+pidFile+`; setsid sh -c 'echo $$ > `+escaped+`; exec sleep 60' & sleep 60 & sleep 60; wait","timeout":"1s","max_retries":0}`)
	c.ok("worker", "start", "--kill-grace", "500ms")
	j := c.waitState("hang", "dead", 30*time.Second)
	if len(j.History) != 1 || j.History[0].Outcome != "timed_out" || !strings.Contains(*j.Error, "timed out") {
		t.Fatalf("timed out job: %+v", j)
	}
	checkGroupGone(t, pidFile, "the timed-out job")
	b, _ := os.ReadFile(escaped)
	pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	if pid <= 1 {
		t.Fatalf("no pid of the escaped process recorded: %q", b)
	}
	t.Cleanup(func() { syscall.Kill(pid, syscall.SIGKILL) })
	waitFor(t, "the process that left the job's group to be killed", 10*time.Second, func() bool {
		st, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		return err != nil || strings.Contains(string(st), ") Z ")
	})
}

// checkGroupGone fails unless the process group whose id a command wrote
// to pidFile has no process left.
func checkGroupGone(t *testing.T, pidFile, what string) {
	t.Helper()
	b, _ := os.ReadFile(pidFile)
	pgid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	if pgid <= 1 {
		t.Fatalf("no pgid recorded: %q", b)
	}
	if members, _ := proc.GroupMembers(pgid); len(members) != 0 {
		t.Fatalf("processes of %s survive: %v", what, members)
	}
}

func TestE2ECancelRunningJob(t *testing.T) {
	c := newCLI(t)
	c.ok("enqueue", "--id", "c1", "--command", "sleep 60")
	c.ok("enqueue", "--id", "c2", "--command", "true", "--run-at", "+1h")
	c.ok("worker", "start")
	c.waitState("c1", "processing", 20*time.Second)
	if out := c.ok("cancel", "c1"); !strings.Contains(out, "cancelled") {
		t.Fatalf("cancel printed %q", out)
	}
	j := c.job("c1")
	if j.State != "cancelled" || j.History[0].Outcome != "cancelled" {
		t.Fatalf("cancelled running job: %+v", j)
	}
	c.ok("cancel", "c2")
	if c.job("c2").State != "cancelled" {
		t.Fatal("pending job not cancelled")
	}
	// --wait 0 records the request and returns; the worker stops the job.
	c.ok("enqueue", "--id", "c3", "--command", "sleep 60")
	c.waitState("c3", "processing", 20*time.Second)
	if out := c.ok("cancel", "c3", "--wait", "0"); out != "c3: cancel requested; its worker stops it\n" {
		t.Fatalf("cancel --wait 0 printed %q", out)
	}
	c.waitState("c3", "cancelled", 20*time.Second)
}

// TestE2ECancelLeavesOtherDatabasesJobs cancels a running job in one
// database while a job of the same id and attempt runs from another on the
// same host (two schemas of one config fire the same cron job ids): the
// cleanup of the cancelled attempt's leftover processes leaves the other
// job alone.
func TestE2ECancelLeavesOtherDatabasesJobs(t *testing.T) {
	a, b := newCLI(t), newCLI(t)
	for _, c := range []*cli{a, b} {
		c.ok("enqueue", "--id", "same", "--command", "touch started && sleep 60")
		c.ok("worker", "start")
	}
	for _, c := range []*cli{a, b} {
		waitFor(t, "the job's command to start", 20*time.Second, func() bool {
			_, err := os.Stat(filepath.Join(c.home, "started"))
			return err == nil
		})
	}
	a.ok("cancel", "same")
	if j := a.job("same"); j.State != "cancelled" {
		t.Fatalf("cancelled job: %+v", j)
	}
	// The other job was not killed: it is cancelled in its turn, not failed.
	b.ok("cancel", "same")
	if j := b.job("same"); j.State != "cancelled" || len(j.History) != 1 || j.History[0].Outcome != "cancelled" {
		t.Fatalf("the other database's job: %+v; want its one attempt cancelled by its own cancel", j)
	}
}

func TestE2EBadInput(t *testing.T) {
	c := newCLI(t)
	c.ok("enqueue", `{"id":"taken","command":"true"}`)
	tests := []struct {
		name string
		args []string
		code int
		msg  string
	}{
		{"malformed JSON", []string{"enqueue", `{"command": "true"`}, 2, "invalid job JSON"},
		{"missing command", []string{"enqueue", `{"id":"x"}`}, 2, `missing "command"`},
		{"unknown field", []string{"enqueue", `{"command":"true","comand":"x"}`}, 2, "comand"},
		{"field name not in lower case", []string{"enqueue", `{"Command":"true"}`}, 2, `unknown field "Command" (field names are lower case: "command")`},
		{"field given twice", []string{"enqueue", `{"command":"true","command":"rm -rf ~"}`}, 2, `field "command" is given twice`},
		{"trailing data after a read-only field", []string{"enqueue", `{"command":"true","state":"pending"}]`}, 2, "trailing data after the object"},
		{"field given twice beside a read-only one", []string{"enqueue", `{"command":"true","state":"pending","command":"rm -rf ~"}`}, 2, `field "command" is given twice`},
		{"duplicate id", []string{"enqueue", `{"id":"taken","command":"true"}`}, 2, "taken"},
		{"negative retries", []string{"enqueue", `{"command":"true","max_retries":-1}`}, 2, "max_retries"},
		{"negative retries flag", []string{"enqueue", "--command", "true", "--max-retries", "-1"}, 2, "max-retries"},
		{"bad run_at", []string{"enqueue", `{"command":"true","run_at":"tomorrow"}`}, 2, "run_at"},
		{"bad timeout", []string{"enqueue", `{"command":"true","timeout":"soon"}`}, 2, "timeout"},
		{"wait without a positive timeout", []string{"wait", "--timeout", "0s", "taken"}, 2, `queuectl: wait: --timeout "0s": want a positive duration`},
		{"unknown state", []string{"list", "--state", "sleeping"}, 2, "pending, scheduled, processing"},
		{"unknown id", []string{"show", "nope"}, 1, "nope"},
		{"unknown id retry", []string{"retry", "nope"}, 1, "nope"},
		{"bad config value", []string{"config", "set", "max-retries", "-3"}, 2, "0 to 1000"},
		{"unknown config key", []string{"config", "set", "colour", "blue"}, 2, "max-retries"},
		{"unknown flag", []string{"list", "--colour"}, 2, "colour"},
		{"extra argument", []string{"show", "a", "b"}, 2, "show"},
		{"unknown command", []string{"bogus"}, 2, "bogus"},
		{"unknown worker subcommand", []string{"worker", "bogus"}, 2, "queuectl: worker: unknown command \"bogus\""},
		{"unknown dlq subcommand", []string{"dlq", "bogus"}, 2, "queuectl: dlq: unknown command"},
		{"unknown config subcommand", []string{"config", "bogus"}, 2, "queuectl: config: unknown command"},
		{"unknown cron subcommand", []string{"cron", "bogus"}, 2, "queuectl: cron: unknown command"},
		{"argument to a command without any", []string{"status", "bogus"}, 2, "queuectl: status: takes no arguments, got \"bogus\""},
		{"argument to a subcommand without any", []string{"queue", "list", "x"}, 2, "queuectl: queue list: takes no arguments, got \"x\""},
		{"argument to validate", []string{"validate", "x"}, 2, "queuectl: validate: takes no arguments"},
		{"retry of nothing", []string{"retry"}, 2, "queuectl: retry: requires at least 1 argument"},
		{"pause of nothing", []string{"queue", "pause"}, 2, "queuectl: queue pause: requires at least 1 argument"},
		{"show of nothing", []string{"show"}, 2, "queuectl: show: takes 1 argument, got 0"},
		{"config set of one", []string{"config", "set", "timeout"}, 2, "queuectl: config set: takes 2 arguments, got 1"},
		{"config get of two", []string{"config", "get", "timeout", "max-retries"}, 2, "queuectl: config get: takes at most 1 argument, got 2"},
		{"validate without a file", []string{"validate"}, 2, "queuectl: validate: a configuration file is required"},
		{"queue set of a negative limit", []string{"queue", "set", "q", "--max-running", "-1"}, 2, "queuectl: queue set: "},
		{"unknown subcommand flag", []string{"worker", "start", "--bogus"}, 2, "bogus"},
		{"bad log level", []string{"--log-level", "bogus", "status"}, 2, "--log-level"},
		{"bad log format", []string{"status", "--log-format", "bogus"}, 2, "--log-format"},
		{"log size zero", []string{"worker", "start", "--log-max-size", "0"}, 2, "--log-max-size 0"},
		{"no log backups", []string{"worker", "start", "--log-backups", "0"}, 2, "--log-backups 0"},
		{"flag not a number", []string{"list", "--limit", "x"}, 2, `invalid argument "x" for "--limit" flag: want a whole number`},
		{"reserved env key", []string{"enqueue", `{"command":"true","env":{"QUEUECTL_JOB_ID":"x"}}`}, 2, "QUEUECTL_JOB_ID"},
		{"env value with NUL", []string{"enqueue", `{"command":"true","env":{"A":"x\u0000"}}`}, 2, "env"},
		{"env not an object", []string{"enqueue", `{"command":"true","env":["A"]}`}, 2, "must be an object"},
		{"id not UTF-8", []string{"enqueue", "{\"id\":\"a\xff\",\"command\":\"true\"}"}, 2, "not valid UTF-8"},
		{"timeout below 1ms", []string{"enqueue", `{"command":"true","timeout":"1us"}`}, 2, "timeout"},
		{"negative timeout flag", []string{"enqueue", "--command", "true", "--timeout", "-5s"}, 2, `--timeout: "-5s" must not be negative`},
		{"negative timeout", []string{"enqueue", `{"command":"true","timeout":-5}`}, 2, `"timeout": "-5" must not be negative`},
		{"negative unique-for flag", []string{"enqueue", "--command", "true", "--unique-key", "k", "--unique-for", "-5s"}, 2, `--unique-for: "-5s" must not be negative`},
		{"negative unique_for", []string{"enqueue", `{"command":"true","unique_key":"k","unique_for":"-1h"}`}, 2, `"unique_for": "-1h" must not be negative`},
		{"timeout over 30d", []string{"enqueue", "--command", "true", "--timeout", "31d"}, 2, "timeout 31d out of range 1ms..30d"},
		{"unique-for over 366d", []string{"enqueue", "--command", "true", "--unique-key", "k", "--unique-for", "400d"}, 2, "unique_for 400d out of range 0..366d"},
		{"run_at beyond 9999", []string{"enqueue", `{"command":"true","run_at":"+3000000d"}`}, 2, "run_at"},
		{"output attempt 0", []string{"output", "taken", "--attempt", "0"}, 2, "--attempt 0: must be 1 or more"},
		{"output attempt -1", []string{"output", "taken", "--attempt", "-1"}, 2, "--attempt -1: must be 1 or more"},
		{"output nth 0", []string{"output", "taken", "--nth", "0"}, 2, "--nth 0: must be 1 or more"},
		{"output nth -2", []string{"output", "taken", "--nth", "-2"}, 2, "--nth -2: must be 1 or more"},
		{"lease zero", []string{"worker", "start", "--lease", "0s"}, 2, "--lease 0: must be from 1s to 24h"},
		{"lease below 1s", []string{"worker", "start", "--lease", "100ms"}, 2, "--lease 100ms: must be from 1s to 24h"},
		{"lease over a day", []string{"worker", "start", "--lease", "25h"}, 2, "--lease 25h: must be from 1s to 24h"},
		{"poll zero", []string{"worker", "start", "--poll", "0"}, 2, "--poll 0: must be from 100ms to 1h"},
		{"poll below 100ms", []string{"worker", "start", "--poll", "10ms"}, 2, "--poll 10ms: must be from 100ms to 1h"},
		{"negative kill grace", []string{"worker", "start", "--kill-grace", "-1s"}, 2, "--kill-grace -1s: must be from 100ms to 1h"},
		{"kill grace zero", []string{"worker", "start", "--kill-grace", "0"}, 2, "--kill-grace 0: must be from 100ms to 1h"},
		{"foreground lease zero", []string{"worker", "start", "--foreground", "--lease", "0s"}, 2, "--lease 0: must be from 1s to 24h"},
		{"worker run lease zero", []string{"worker", "run", "--lease", "0s"}, 2, "--lease 0: must be from 1s to 24h"},
		{"worker run poll zero", []string{"worker", "run", "--poll", "0s"}, 2, "--poll 0: must be from 100ms to 1h"},
		{"worker run kill grace zero", []string{"worker", "run", "--kill-grace", "0s"}, 2, "--kill-grace 0: must be from 100ms to 1h"},
		{"service lease zero", []string{"run", "-c", "queue.hcl", "--lease", "0s"}, 2, "--lease 0: must be from 1s to 24h"},
		{"service kill grace zero", []string{"run", "-c", "queue.hcl", "--kill-grace", "0s"}, 2, "--kill-grace 0: must be from 100ms to 1h"},
		{"negative grace", []string{"worker", "start", "--grace", "-1s"}, 2, "--grace -1s: must not be negative (0: until a second signal)"},
		{"service negative grace", []string{"run", "-c", "queue.hcl", "--grace", "-5s"}, 2, "--grace -5s: must not be negative"},
		{"negative stop timeout", []string{"worker", "stop", "--timeout", "-1s"}, 2, "--timeout -1s: must not be negative (0: wait for running jobs)"},
		{"dlq retry of nothing", []string{"dlq", "retry"}, 2, "dlq retry: give the ids of dead jobs, or --all"},
		{"dlq retry of ids and all", []string{"dlq", "retry", "--all", "taken"}, 2, "dlq retry: give job ids or --all, not both"},
		{"mysql URL", []string{"--db", "mysql://x", "status"}, 2, `--db: unsupported database URL "mysql://…": use a SQLite file path or a postgres:// or postgresql:// URL`},
		{"sqlite URL", []string{"--db", "sqlite:///tmp/q.db", "status"}, 2, `--db: unsupported database URL "sqlite://…"`},
		{"file URL", []string{"--db", "file://q.db", "list"}, 2, `--db: unsupported database URL "file://…"`},
		{"upper-case postgres URL", []string{"--db", "POSTGRES://db/q", "status"}, 2, `--db: unsupported database URL "POSTGRES://…"`},
		{"URL to a worker", []string{"--db", "redis://x", "worker", "start"}, 2, `--db: unsupported database URL "redis://…"`},
		{"URL to bench", []string{"--db", "mysql://x", "bench", "--quick"}, 2, `--db: unsupported database URL "mysql://…"`},
		{"database that is a directory", []string{"--db", "/", "status"}, 1, "queuectl: open /: is a directory, not a database file"},
		{"unreadable postgres URL", []string{"--db", "postgres://u:secretpw@127.0.0.1:1/q?sslmode=bogus", "status"}, 2, "--db: cannot parse `postgres://u:xxxxx@"},
		{"worker queue with a space", []string{"worker", "start", "--queue", "a b"}, 2, `--queue: invalid: queue "a b" contains white space`},
		{"worker queue empty", []string{"worker", "start", "--queue", ""}, 2, "--queue: invalid: queue is empty"},
		{"migrate to nothing", []string{"migrate", "--to", ""}, 2, `migrate --to "": give a postgres:// URL`},
		{"migrate to an unreadable URL", []string{"migrate", "--to", "postgres://u:secretpw@127.0.0.1:1/q?sslmode=bogus"}, 2, "migrate --to: cannot parse `postgres://u:xxxxx@"},
		{"backup to nothing", []string{"backup", ""}, 2, "backup: FILE is empty"},
		{"backup into no directory", []string{"backup", "/nonexistent-dir/b.db"}, 1, "backup: cannot write b.db in /nonexistent-dir: no such file or directory"},
		{"backup of a PostgreSQL database", []string{"--db", "postgres://u@127.0.0.1:1/q", "backup", "b.db"}, 2, "backup: only SQLite databases are copied by queuectl; back up PostgreSQL with pg_dump"},
	}
	before := c.ok("list", "--json")
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out, errOut, code := c.run(tc.args...)
			if code != tc.code {
				t.Fatalf("exit %d, want %d (stderr %q)", code, tc.code, errOut)
			}
			if out != "" {
				t.Errorf("stdout should be empty, got %q", out)
			}
			if strings.Count(strings.TrimSpace(errOut), "\n") != 0 || !strings.Contains(errOut, tc.msg) {
				t.Errorf("want one line naming %q, got %q", tc.msg, errOut)
			}
			if strings.Contains(errOut, "queuectl: queuectl") || strings.Contains(errOut, "arg(s)") {
				t.Errorf("the program is named twice, or cobra's wording leaks: %q", errOut)
			}
		})
	}
	if _, errOut, _ := c.run("bogus"); errOut != "queuectl: unknown command \"bogus\"\n" {
		t.Errorf("unknown command: stderr %q, want the program named once", errOut)
	}
	if after := c.ok("list", "--json"); after != before {
		t.Fatalf("bad input changed stored data:\nbefore %s\nafter %s", before, after)
	}
	if got := c.ok("config", "get", "max_retries"); got != "3\n" {
		t.Fatalf("config changed: %q", got)
	}
}

// A --db or QUEUECTL_DB that looks like a URL is a PostgreSQL one or
// refused, never taken for a SQLite path; a path may hold ':' elsewhere.
func TestE2EDatabaseURLs(t *testing.T) {
	c := newCLI(t)
	c.db = "mysql://admin:hunter2@db/q"
	_, errOut, code := c.run("status")
	if want := `queuectl: QUEUECTL_DB: unsupported database URL "mysql://…": use a SQLite file path or a postgres:// or postgresql:// URL` + "\n"; code != 2 || errOut != want {
		t.Errorf("QUEUECTL_DB mysql URL: exit %d, stderr %q; want 2, %q", code, errOut, want)
	}
	if _, errOut, _ := c.run("--db", "mysql://admin:hunter2@db/q", "status"); strings.Contains(errOut, "hunter2") {
		t.Errorf("the error shows the URL's password: %q", errOut)
	}
	for _, path := range []string{"a:b.db", "q.db:", "x:/y.db", "1http://x.db"} {
		t.Run(path, func(t *testing.T) {
			if strings.Contains(path, "/") {
				if err := os.MkdirAll(filepath.Join(c.home, filepath.Dir(path)), 0o700); err != nil {
					t.Fatal(err)
				}
			}
			c.db = path
			c.ok("enqueue", "--command", "true")
			if _, err := os.Stat(filepath.Join(c.home, path)); err != nil {
				t.Errorf("no SQLite file at %s: %v", path, err)
			}
		})
	}
}

// A command that only reads does not create a database: at a mistyped
// path it says there is none, names the path and where it came from, and
// leaves no file behind; a command that writes creates it as before.
func TestE2EReadCommandsCreateNoDatabase(t *testing.T) {
	c := newCLI(t)
	c.db = "typo.db"
	path := filepath.Join(c.home, "typo.db")
	for _, args := range [][]string{
		{"status"}, {"list"}, {"show", "x"}, {"output", "x"}, {"dlq", "list"}, {"queue", "list"},
		{"wait", "x"}, {"worker", "list"}, {"worker", "stop"}, {"config", "get"}, {"stats"}, {"backup", "copy.db"},
		{"cron", "list"}, {"cron", "next", "x"}, {"migrate", "--to", "postgres://u@127.0.0.1:1/q"},
		{"cleanup", "--older-than", "1d", "--dry-run"},
	} {
		name := args
		switch {
		case args[len(args)-1] == "x" || args[0] == "backup":
			name = args[:len(args)-1] // the command, not its argument
		case args[0] == "migrate" || args[0] == "cleanup":
			name = args[:1]
		}
		_, errOut, code := c.run(args...)
		want := "queuectl: " + strings.Join(name, " ") + ": no database at " + path +
			": nothing has written to it yet (enqueue, worker start and migrate create it); check QUEUECTL_DB\n"
		if code != 2 || errOut != want {
			t.Errorf("%v: exit %d, stderr %q; want 2, %q", args, code, errOut, want)
		}
		if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("%v created %s: %v", args, path, err)
		}
	}
	// With a file, the cron commands show its jobs as never fired.
	cfg := filepath.Join(c.home, "queue.hcl")
	writeFile(t, cfg, "job \"nightly\" {\n  schedule = \"0 3 * * *\"\n  command  = \"true\"\n}\n")
	if out := c.ok("cron", "list", "-c", cfg); !strings.Contains(out, "nightly") {
		t.Errorf("cron list -c without a database: %q", out)
	}
	if out := c.ok("cron", "next", "nightly", "-n", "1", "-c", cfg); !strings.Contains(out, "03:00:00") {
		t.Errorf("cron next -c without a database: %q", out)
	}
	if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("cron list -c created %s: %v", path, err)
	}
	c.ok("enqueue", "--command", "true")
	if got := c.list("pending"); len(got) != 1 {
		t.Errorf("after an enqueue created the database, list shows %d pending jobs; want 1", len(got))
	}
}

// A command that only reads creates no home either: on a host where
// nothing has written yet, it says there is no database and leaves no
// directory behind. The first command that writes creates the home, 0700.
func TestE2EReadCommandsCreateNoHome(t *testing.T) {
	top := t.TempDir()
	home := filepath.Join(top, "home")
	cfg := filepath.Join(top, "queue.hcl")
	writeFile(t, cfg, "job \"nightly\" {\n  schedule = \"0 3 * * *\"\n  command  = \"true\"\n}\n")
	run := func(args ...string) (string, string, int) {
		t.Helper()
		cmd := exec.Command(binary, args...)
		cmd.Env = append(os.Environ(), "QUEUECTL_HOME="+home, "QUEUECTL_DB=", "QUEUECTL_CONFIG=")
		cmd.Dir = top
		return runProcess(t, cmd)
	}
	noHome := func(what string) {
		t.Helper()
		if _, err := os.Stat(home); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("%s created the home %s: %v", what, home, err)
		}
	}
	for _, args := range [][]string{
		{"status"}, {"list"}, {"show", "x"}, {"output", "x"}, {"dlq", "list"}, {"queue", "list"},
		{"wait", "x"}, {"worker", "list"}, {"worker", "stop"}, {"config", "get"}, {"stats"}, {"backup", "copy.db"},
		{"cron", "list"}, {"cron", "next", "x"}, {"migrate", "--to", "postgres://u@127.0.0.1:1/q"},
		{"cleanup", "--older-than", "1d", "--dry-run"},
	} {
		_, errOut, code := run(args...)
		want := ": no database at " + filepath.Join(home, "queue.db") + ": nothing has written to it yet"
		if code != 2 || !strings.Contains(errOut, want) {
			t.Errorf("%v: exit %d, stderr %q; want 2, %q", args, code, errOut, want)
		}
		noHome(fmt.Sprint(args))
	}
	// With a file and no database, the cron commands show its jobs.
	if out, errOut, code := run("cron", "list", "-c", cfg); code != 0 || !strings.Contains(out, "nightly") {
		t.Errorf("cron list -c: exit %d, %q %q", code, out, errOut)
	}
	noHome("cron list -c")
	if out, errOut, code := run("enqueue", "--command", "true"); code != 0 {
		t.Fatalf("enqueue: exit %d, %q %q", code, out, errOut)
	}
	fi, err := os.Stat(home)
	if err != nil || !fi.IsDir() || fi.Mode().Perm() != 0o700 {
		t.Fatalf("enqueue did not create the home 0700: %v %v", fi, err)
	}
	var st struct {
		Jobs map[string]int `json:"jobs"`
	}
	out, errOut, code := run("status", "--json")
	if err := json.Unmarshal([]byte(out), &st); code != 0 || err != nil || st.Jobs["pending"] != 1 {
		t.Errorf("status after the enqueue: exit %d, %q %q; want 1 pending job", code, out, errOut)
	}
}

func TestE2EBatchEnqueueIsAtomic(t *testing.T) {
	c := newCLI(t)
	path := filepath.Join(t.TempDir(), "jobs.jsonl")
	os.WriteFile(path, []byte(`{"id":"a","command":"true"}`+"\n"+`{"id":"b","command":"true"}`+"\n"+`{"id":"a","command":"true"}`+"\n"), 0o644)
	_, errOut, code := c.run("enqueue", "--file", path)
	if code != 2 || !strings.Contains(errOut, `"a"`) {
		t.Fatalf("duplicate in a batch: exit %d %q", code, errOut)
	}
	if n := len(c.list("")); n != 0 {
		t.Fatalf("a rejected batch stored %d jobs", n)
	}
	os.WriteFile(path, []byte(`{"command":"true"}`+"\n"+`{"command":true}`+"\n"), 0o644)
	if _, errOut, code := c.run("enqueue", "--file", path); code != 2 || !strings.Contains(errOut, "line 2") {
		t.Fatalf("bad line: exit %d %q", code, errOut)
	}
}

func TestE2EForegroundWorkersStopOnInterrupt(t *testing.T) {
	c := newCLI(t)
	c.ok("enqueue", "--id", "fg", "--command", "sleep 1; echo fg done")
	cmd := c.cmd("worker", "start", "--foreground", "--count", "2")
	var out, logs bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	c.waitState("fg", "processing", 20*time.Second)
	// Ctrl-C: the running job finishes, then the workers exit.
	cmd.Process.Signal(syscall.SIGINT)
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("foreground workers: %v\n%s", err, logs.String())
		}
	case <-time.After(30 * time.Second):
		cmd.Process.Kill()
		t.Fatalf("foreground workers did not stop:\n%s", logs.String())
	}
	if j := c.job("fg"); j.State != "completed" {
		t.Fatalf("job after Ctrl-C: %+v", j)
	}
	if pids := strings.Fields(out.String()); len(pids) != 2 {
		t.Fatalf("printed pids %q", out.String())
	}
}

func TestE2EStatsConfigAndCleanup(t *testing.T) {
	c := newCLI(t)
	c.ok("enqueue", "--id", "ok1", "--command", "sleep 0.3")
	c.ok("enqueue", "--id", "bad1", "--command", "exit 1", "--max-retries", "0")
	c.ok("enqueue", "--id", "wait", "--command", "true", "--run-at", "+1h")
	c.ok("worker", "start")
	c.waitState("bad1", "dead", 20*time.Second)
	c.waitState("ok1", "completed", 20*time.Second)
	type statsJSON struct {
		Total struct {
			Attempts    int            `json:"attempts"`
			FailureRate float64        `json:"failure_rate"`
			Jobs        map[string]int `json:"jobs"`
			RunTimeMS   struct {
				Min, P50, P99, Max int64
			} `json:"run_time_ms"`
			LastHour int `json:"completed_last_hour"`
		} `json:"total"`
		Queues []struct {
			Queue string `json:"queue"`
		} `json:"queues"`
		Slowest []struct {
			ID         string `json:"id"`
			DurationMS int64  `json:"duration_ms"`
		} `json:"slowest"`
	}
	var stats statsJSON
	if err := json.Unmarshal([]byte(c.ok("stats", "--json")), &stats); err != nil {
		t.Fatal(err)
	}
	r := stats.Total.RunTimeMS
	if stats.Total.Attempts != 2 || stats.Total.FailureRate != 0.5 || stats.Total.Jobs["pending"] != 1 || stats.Total.LastHour != 1 ||
		len(stats.Queues) != 1 || len(stats.Slowest) != 2 || stats.Slowest[0].ID != "ok1" || stats.Slowest[0].DurationMS < 300 ||
		r.Max != stats.Slowest[0].DurationMS || r.Min != stats.Slowest[1].DurationMS || r.P99 < r.Max*63/64 || r.P50 > r.Min*65/64+1 {
		t.Fatalf("stats: %+v", stats)
	}
	if out := c.ok("stats"); !strings.Contains(out, "P95") || !strings.Contains(out, "50.0%") {
		t.Fatalf("stats table:\n%s", out)
	}
	var cfg map[string]string
	json.Unmarshal([]byte(c.ok("config", "get", "--json")), &cfg)
	if cfg["max-retries"] != "3" || cfg["backoff-base"] != "2" || cfg["max-backoff"] != "1h" || cfg["timeout"] != "none" {
		t.Fatalf("config get: %v", cfg)
	}
	c.ok("config", "set", "timeout", "90s")
	if got := c.ok("config", "get", "timeout"); got != "1m30s\n" {
		t.Fatalf("timeout = %q", got)
	}
	if out := c.ok("cleanup", "--older-than", "1h"); out != "deleted 0 job(s)\n" {
		t.Fatalf("nothing is an hour old: %q", out)
	}
	if out := c.ok("cleanup", "--older-than", "0s", "--state", "dead"); out != "deleted 1 job(s)\n" {
		t.Fatalf("cleanup dead: %q", out)
	}
	// The deleted job's attempt leaves the statistics.
	stats = statsJSON{}
	if err := json.Unmarshal([]byte(c.ok("stats", "--json")), &stats); err != nil {
		t.Fatal(err)
	}
	if stats.Total.Attempts != 1 || stats.Total.FailureRate != 0 || len(stats.Slowest) != 1 || stats.Slowest[0].ID != "ok1" {
		t.Fatalf("stats after cleanup: %+v", stats)
	}
	if _, errOut, code := c.run("cleanup", "--older-than", "0s", "--state", "pending"); code != 2 || !strings.Contains(errOut, "finished") {
		t.Fatalf("cleanup of pending jobs must be refused: %d %q", code, errOut)
	}
	if n := len(c.list("")); n != 2 {
		t.Fatalf("%d jobs left, want 2", n)
	}
}

// The stats table shows no failure rate and no run times for a queue with
// no attempts in the window, rather than 0.0% and 0ms, and a few jobs done
// in the last hour as "<0.1" a minute, not 0.0.
func TestE2EStatsTableWithoutAttempts(t *testing.T) {
	c := newCLI(t)
	c.ok("enqueue", "--id", "done", "--command", "true")
	c.ok("enqueue", "--id", "later", "--queue", "idle", "--run-at", "+1h", "--command", "true")
	c.ok("worker", "start")
	c.waitState("done", "completed", 20*time.Second)
	c.ok("worker", "stop")
	rows := map[string][]string{}
	for _, line := range strings.Split(c.ok("stats"), "\n") {
		if f := strings.Fields(line); len(f) == 10 {
			rows[f[0]] = f[1:]
		}
	}
	if got, want := strings.Join(rows["idle"], " "), "1 0 - - - - - - 0.0"; got != want {
		t.Errorf("the idle queue's row: %q, want %q", got, want)
	}
	if r := rows["default"]; len(r) != 9 || r[2] != "0.0%" || r[3] == "-" || r[8] != "<0.1" {
		t.Errorf("the default queue's row: %q, want a 0.0%% failure rate, run times and <0.1 done a minute", r)
	}
}

// The bench harness must keep working; its figures are not asserted here
// (timings live in benchmarks, not tests), only that it measures.
func TestE2EBenchQuick(t *testing.T) {
	c := newCLI(t)
	results := benchQuick(t, c, "enqueue,engine,latency,scale")
	seen := map[string]int{}
	for _, r := range results {
		if r.Value <= 0 || len(r.Runs) == 0 {
			t.Errorf("figure without a measurement: %+v", r)
		}
		if r.Scenario == "scale" && r.Unit == "jobs/s" && r.Base <= 0 {
			t.Errorf("large-table rate without the empty-table rate measured next to it: %+v", r)
		}
		seen[r.Scenario]++
	}
	if seen["enqueue"] != 1 || seen["engine"] != 3 || seen["latency"] != 3 || seen["scale"] != 2 || seen["scale-baseline"] != 1 {
		t.Fatalf("scenarios measured: %v", seen)
	}
}

// benchFigure is one figure of `queuectl bench --json`.
type benchFigure struct {
	Scenario string    `json:"scenario"`
	Name     string    `json:"name"`
	Unit     string    `json:"unit"`
	Value    float64   `json:"value"`
	Runs     []float64 `json:"runs"`
	Base     float64   `json:"base"`
}

// benchQuick runs `queuectl bench --quick --json` on the scenarios only
// names and returns its figures.
func benchQuick(t *testing.T, c *cli, only string) []benchFigure {
	t.Helper()
	out := c.ok("bench", "--quick", "--only", only, "--json")
	var results []benchFigure
	if err := json.Unmarshal([]byte(out), &results); err != nil {
		t.Fatalf("bench --json: %v\n%s", err, out)
	}
	return results
}

// The enqueue-http scenario drives a real `queuectl serve` with real
// workers: every request must succeed and every figure be measured.
func TestE2EBenchEnqueueHTTP(t *testing.T) {
	c := newCLI(t)
	results := benchQuick(t, c, "enqueue-http")
	if len(results) != 8 {
		t.Fatalf("%d figures, want 8: %+v", len(results), results)
	}
	for _, r := range results {
		if r.Scenario != "enqueue-http" {
			t.Errorf("figure of scenario %q", r.Scenario)
		}
		failed := strings.HasPrefix(r.Name, "requests that failed")
		if failed && r.Value != 0 || !failed && r.Value <= 0 {
			t.Errorf("%s: %v %s", r.Name, r.Value, r.Unit)
		}
	}
}

// Workers of another host can only be asked through the store; --all-hosts
// does that and waits until they have unregistered.
func TestE2EWorkerStopAllHosts(t *testing.T) {
	c := newCLI(t)
	remote := c.cmd("worker", "start", "--count", "2", "--lease", "3s")
	remote.Env = append(remote.Env, "QUEUECTL_HOST=elsewhere")
	if _, errOut, code := runProcess(t, remote); code != 0 {
		t.Fatalf("start remote workers: %s", errOut)
	}
	if out := c.ok("worker", "stop"); !strings.Contains(out, "no workers") {
		t.Fatalf("without --all-hosts another host's workers are not touched: %q", out)
	}
	if out := c.ok("worker", "stop", "--all-hosts", "--timeout", "30s"); out != "stopped 2 worker(s)\n" {
		t.Fatalf("worker stop --all-hosts printed %q", out)
	}
	var ws []any
	json.Unmarshal([]byte(c.ok("worker", "list", "--json")), &ws)
	if len(ws) != 0 {
		t.Fatalf("workers still registered: %v", ws)
	}
	// Nothing left anywhere: it says so, not "on this host".
	if out := c.ok("worker", "stop", "--all-hosts"); out != "no workers running on any host\n" {
		t.Fatalf("worker stop --all-hosts with no workers printed %q", out)
	}
}

func TestE2EJobFieldsCannotRewriteTheTerminal(t *testing.T) {
	c := newCLI(t)
	c.ok("enqueue", `{"id":"esc","command":"printf '\u001b[2J\u001b]0;owned\u0007\\n'"}`)
	for _, args := range [][]string{{"list"}, {"show", "esc"}} {
		out := c.ok(args...)
		if strings.ContainsAny(out, "\x1b\x07") {
			t.Errorf("queuectl %s wrote control characters: %q", strings.Join(args, " "), out)
		}
		if !strings.Contains(out, `\x1b`) {
			t.Errorf("queuectl %s should show the escape as \\x1b: %q", strings.Join(args, " "), out)
		}
	}
	c.ok("worker", "start", "--count", "1")
	c.waitState("esc", "completed", 10*time.Second)
	// Piped, output is the bytes the job wrote.
	if out := c.ok("output", "esc"); out != "\x1b[2J\x1b]0;owned\x07\n" {
		t.Errorf("output piped = %q, want the raw bytes", out)
	}
}

func TestE2EFilesAreOwnerOnly(t *testing.T) {
	c := newCLI(t)
	c.ok("enqueue", `{"command":"true"}`)
	// A home an earlier version left open is tightened once it is used.
	if err := os.Chmod(c.home, 0o755); err != nil {
		t.Fatal(err)
	}
	c.ok("status")
	for _, p := range []string{c.home, filepath.Join(c.home, "queue.db")} {
		if fi, err := os.Stat(p); err != nil || fi.Mode().Perm()&0o077 != 0 {
			t.Errorf("%s: mode %v (%v), want owner-only", p, fi.Mode().Perm(), err)
		}
	}
	// A database elsewhere that others can read: one warning naming it.
	db := filepath.Join(t.TempDir(), "shared.db")
	c.ok("--db", db, "migrate")
	if err := os.Chmod(db, 0o644); err != nil {
		t.Fatal(err)
	}
	_, errOut, code := c.run("--db", db, "status")
	if code != 0 || strings.Count(errOut, "warning") != 1 || !strings.Contains(errOut, db) {
		t.Errorf("status on a world-readable --db: exit %d, stderr %q; want one warning naming it", code, errOut)
	}
}

// TestE2EForegroundInterruptWhileStarting sends Ctrl-C while the attached
// workers are still starting (before they handle signals): that is the
// stop the user asked for, not a worker failure.
func TestE2EForegroundInterruptWhileStarting(t *testing.T) {
	c := newCLI(t)
	cmd := c.cmd("worker", "start", "--foreground", "--count", "2")
	var logs bytes.Buffer
	cmd.Stderr = &logs
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(stdout)
	for range 2 {
		if !sc.Scan() {
			t.Fatalf("workers' pids not printed: %v\n%s", sc.Err(), logs.String())
		}
	}
	cmd.Process.Signal(syscall.SIGINT)
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Ctrl-C while starting: %v\n%s", err, logs.String())
		}
	case <-time.After(30 * time.Second):
		cmd.Process.Kill()
		t.Fatalf("foreground workers did not stop:\n%s", logs.String())
	}
}

// --log-format reaches the attached worker processes of --count 2, which do
// the logging: console lines even when stderr is no terminal.
func TestE2EForegroundLogFormat(t *testing.T) {
	c := newCLI(t)
	cmd := c.cmd("worker", "start", "--foreground", "--count", "2", "--log-format", "console")
	var logs syncbuf.Buffer
	cmd.Stderr = &logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the workers to start", 30*time.Second, func() bool {
		return strings.Count(logs.String(), "worker started") == 2
	})
	cmd.Process.Signal(syscall.SIGINT)
	if err := cmd.Wait(); err != nil {
		t.Fatalf("Ctrl-C: %v\n%s", err, logs.String())
	}
	for _, line := range strings.Split(strings.TrimSpace(logs.String()), "\n") {
		if strings.HasPrefix(line, "{") {
			t.Fatalf("a JSON line under --log-format console: %q", line)
		}
	}
}

// migrate says how many migrations it applied on SQLite as on
// PostgreSQL: all of them to a new database, then none.
func TestE2EMigrateSaysWhatItApplied(t *testing.T) {
	c := newCLI(t)
	latest := sqlite.LatestVersion()
	for _, n := range []int{latest, 0} {
		want := fmt.Sprintf("applied %d migration(s); schema version %d\n", n, latest)
		if out := c.ok("migrate"); out != want {
			t.Fatalf("migrate said %q, want %q", out, want)
		}
	}
}

// A worker logs what it cost when it exits, and any command its store's
// writes at debug level: operators read the write lock's share from them.
func TestE2EWorkerAndEnqueueLogTheirCost(t *testing.T) {
	c := newCLI(t)
	c.ok("migrate") // so that the enqueue is the one write
	_, errOut, code := c.run("--log-level", "debug", "--log-format", "json", "enqueue", "--id", "a", "--command", "true")
	if code != 0 || !strings.Contains(errOut, `"message":"store write stats"`) || !strings.Contains(errOut, `"write_transactions":1,`) {
		t.Fatalf("enqueue at debug level: exit %d, log %q", code, errOut)
	}
	c.ok("worker", "start")
	c.waitState("a", "completed", 20*time.Second)
	c.ok("worker", "stop")
	var stats map[string]any
	var b []byte
	// The line comes after the worker has unregistered, as it exits.
	waitFor(t, "the worker's process stats line", 20*time.Second, func() bool {
		logs, _ := filepath.Glob(filepath.Join(c.home, "logs", "worker-*.log"))
		if len(logs) != 1 {
			return false
		}
		b, _ = os.ReadFile(logs[0])
		for _, line := range strings.Split(string(b), "\n") {
			var l map[string]any
			if json.Unmarshal([]byte(line), &l) == nil && l["message"] == "process stats" {
				stats = l
			}
		}
		return stats != nil
	})
	for _, k := range []string{"cpu_user_ms", "cpu_system_ms", "children_cpu_user_ms", "children_cpu_system_ms", "write_transactions", "write_wait_ms", "write_lock_ms", "write_lock_cpu_ms"} {
		if _, ok := stats[k].(float64); !ok {
			t.Fatalf("worker stats line lacks %s: %v (log %s)", k, stats, b)
		}
	}
	if stats["write_transactions"].(float64) < 2 {
		t.Fatalf("a worker that ran a job wrote at least a claim and an outcome: %v", stats)
	}
}

// A worker killed with no other worker left to unregister it stays
// registered: status does not count it as active, and worker stop
// --all-hosts neither waits for a silent worker of another host nor counts
// it as stopped.
func TestE2EGoneWorkersAreNotActive(t *testing.T) {
	c := newCLI(t)
	c.ok("worker", "start")
	var ws []struct {
		PID int `json:"pid"`
	}
	if err := json.Unmarshal([]byte(c.ok("worker", "list", "--json")), &ws); err != nil || len(ws) != 1 {
		t.Fatalf("worker list: %v %v", ws, err)
	}
	if err := syscall.Kill(ws[0].PID, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the killed worker to be gone", 10*time.Second, func() bool { return syscall.Kill(ws[0].PID, 0) != nil })
	if out := c.ok("status"); !strings.Contains(out, "workers: 0 active (0 busy); 1 registered but gone or not heard from in 30s (worker list)") {
		t.Fatalf("status after the worker was killed:\n%s", out)
	}

	st, err := sqlite.Open(context.Background(), filepath.Join(c.home, "queue.db"))
	if err != nil {
		t.Fatal(err)
	}
	long := time.Now().Add(-time.Hour)
	err = st.RegisterWorker(context.Background(), &queue.WorkerInfo{ID: "silent-1", PID: 1, Host: "elsewhere", BootID: "b", StartedAt: long, HeartbeatAt: long})
	st.Close()
	if err != nil {
		t.Fatal(err)
	}
	stop := c.cmd("worker", "stop", "--all-hosts")
	timer := time.AfterFunc(20*time.Second, func() { stop.Process.Kill() })
	out, errOut, code := runProcess(t, stop)
	if !timer.Stop() {
		t.Fatal("worker stop --all-hosts waits for a worker not heard from in an hour")
	}
	if code != 0 || out != "stopped 0 worker(s)\n" || !strings.Contains(errOut, "1 worker(s) on other hosts not heard from in 30s, left registered") ||
		!strings.Contains(errOut, "silent-1") {
		t.Fatalf("worker stop --all-hosts with a silent remote worker: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
}

// Duration flags take what the file and the job JSON take: days and plain
// seconds too, and refuse the rest naming the syntax.
func TestE2EDurationFlagsTakeDays(t *testing.T) {
	c := newCLI(t)
	c.ok("migrate")
	if out := c.ok("worker", "stop", "--timeout", "1d"); !strings.Contains(out, "no workers running") {
		t.Errorf("worker stop --timeout 1d: %q", out)
	}
	c.ok("enqueue", "--id", "p", "--command", "true")
	if out := c.ok("cancel", "p", "--wait", "90"); out != "p cancelled\n" {
		t.Errorf("cancel --wait 90: %q", out)
	}
	_, errOut, code := c.run("worker", "start", "--lease", "1x")
	if code != 2 || !strings.Contains(errOut, `invalid duration "1x": use a number with a unit`) {
		t.Errorf("worker start --lease 1x: exit %d, %q", code, errOut)
	}
}
