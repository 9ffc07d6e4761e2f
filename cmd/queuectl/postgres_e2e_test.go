package main

// End-to-end tests of the built queuectl binary on a real PostgreSQL server:
// several hosts sharing one queue, rescue across hosts by lease expiry, and
// (opt-in) a server restart under running workers. Like the queue/postgres
// tests they need TEST_DATABASE_URL and skip, saying so, without it. Each
// test works in a schema of its own, dropped when it ends.
//
// A "host" is a QUEUECTL_HOME of its own plus a QUEUECTL_HOST name: workers
// with different host names cannot see each other's processes, so they
// detect a dead peer only by lease expiry, as on separate machines.

import (
	"bufio"
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/queuectl/queuectl/internal/proc"
	"github.com/queuectl/queuectl/internal/testpg"
)

var (
	pgReachOnce sync.Once
	pgReachErr  error
)

// pgBaseURL returns TEST_DATABASE_URL or skips the test.
func pgBaseURL(t *testing.T) string {
	t.Helper()
	u := os.Getenv("TEST_DATABASE_URL")
	if u == "" {
		testpg.Unavailable(t, "PostgreSQL end-to-end tests skipped: set TEST_DATABASE_URL (e.g. postgres://user@127.0.0.1:5432/test?sslmode=disable) to run them")
	}
	if !isPostgresURL(u) {
		testpg.Unavailable(t, "PostgreSQL end-to-end tests skipped: the CLI needs TEST_DATABASE_URL in postgres:// URL form")
	}
	pgReachOnce.Do(func() { pgReachErr = pgTestExec(u, "SELECT 1") })
	if pgReachErr != nil {
		testpg.Unavailable(t, "PostgreSQL end-to-end tests skipped: the server at TEST_DATABASE_URL is unreachable: %v", pgReachErr)
	}
	return u
}

// pgTestExec runs one statement on a connection of its own.
func pgTestExec(u, sql string, args ...any) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := pgx.Connect(ctx, u)
	if err != nil {
		return err
	}
	defer c.Close(context.Background())
	_, err = c.Exec(ctx, sql, args...)
	return err
}

// pgTestQueryInt runs a query returning one integer on a connection of its own.
func pgTestQueryInt(u, sql string, args ...any) (int, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := pgx.Connect(ctx, u)
	if err != nil {
		return 0, err
	}
	defer c.Close(context.Background())
	var n int
	err = c.QueryRow(ctx, sql, args...).Scan(&n)
	return n, err
}

// newPGSchema creates an empty schema for one test and returns its name and
// the URL of the queue in it (search_path and application_name are the
// schema, so the test can find its own connections in pg_stat_activity).
func newPGSchema(t *testing.T) (schema, db string) {
	t.Helper()
	base := pgBaseURL(t)
	b := make([]byte, 6)
	rand.Read(b)
	schema = "qe_" + hex.EncodeToString(b)
	if err := pgTestExec(base, "CREATE SCHEMA "+schema); err != nil {
		t.Fatalf("create schema: %v", err)
	}
	t.Cleanup(func() {
		if err := pgTestExec(base, "DROP SCHEMA "+schema+" CASCADE"); err != nil {
			t.Errorf("drop schema %s: %v", schema, err)
		}
	})
	u, err := url.Parse(base)
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	q.Set("search_path", schema)
	q.Set("application_name", schema)
	u.RawQuery = q.Encode()
	return schema, u.String()
}

// pgHost is one simulated host on the shared PostgreSQL queue: a home of its
// own and a host name. cli's helpers run against the home's SQLite file
// (cli.cmd clears QUEUECTL_DB), so pgHost has its own run/ok/job/list. With
// db "" it uses the home's SQLite file (for the throughput comparison).
type pgHost struct {
	*cli
	db, name string
	workers  []workerProc // started by startWorkers
}

type workerProc struct {
	pid   int
	start uint64 // process start time, so a reused pid is not mistaken for it
}

func newPGHost(t *testing.T, db, name string) *pgHost {
	t.Helper()
	h := &pgHost{cli: newCLI(t), db: db, name: name}
	t.Cleanup(func() {
		// newCLI's cleanup stops workers of the home's SQLite file; these
		// are registered in PostgreSQL under this host's name.
		h.run("worker", "stop", "--timeout", "1s")
		for _, w := range h.workers {
			if proc.Alive(w.pid, w.start) { // the stop failed (server down?)
				syscall.Kill(w.pid, syscall.SIGKILL)
			}
		}
	})
	return h
}

func (h *pgHost) cmd(args ...string) *exec.Cmd {
	cmd := h.cli.cmd(args...)
	// The last value of a repeated variable wins.
	cmd.Env = append(cmd.Env, "QUEUECTL_DB="+h.db, "QUEUECTL_HOST="+h.name)
	return cmd
}

func (h *pgHost) run(args ...string) (string, string, int) {
	h.t.Helper()
	return runProcess(h.t, h.cmd(args...))
}

func (h *pgHost) ok(args ...string) string {
	h.t.Helper()
	out, errOut, code := h.run(args...)
	if code != 0 {
		h.t.Fatalf("%s: queuectl %s: exit %d: %s", h.name, strings.Join(args, " "), code, errOut)
	}
	return out
}

// startWorkers runs worker start with args and returns the printed pids.
func (h *pgHost) startWorkers(args ...string) []int {
	h.t.Helper()
	var pids []int
	for _, f := range strings.Fields(h.ok(append([]string{"worker", "start"}, args...)...)) {
		pid, err := strconv.Atoi(f)
		if err != nil {
			h.t.Fatalf("worker start printed %q", f)
		}
		start, _ := proc.StartTime(pid)
		h.workers = append(h.workers, workerProc{pid, start})
		pids = append(pids, pid)
	}
	return pids
}

// pgJob is a job as show --json and list --json print it (list has no
// history), with the fields these tests look at.
type pgJob struct {
	ID         string     `json:"id"`
	State      string     `json:"state"`
	Attempts   int        `json:"attempts"`
	Worker     *string    `json:"worker"`
	CreatedAt  time.Time  `json:"created_at"`
	StartedAt  *time.Time `json:"started_at"`
	FinishedAt *time.Time `json:"finished_at"`
	History    []struct {
		Attempt    int       `json:"attempt"`
		StartedAt  time.Time `json:"started_at"`
		FinishedAt time.Time `json:"finished_at"`
		Outcome    string    `json:"outcome"`
		Worker     string    `json:"worker"`
		Error      *string   `json:"error"`
	} `json:"history"`
}

func (h *pgHost) job(id string) pgJob {
	h.t.Helper()
	var j pgJob
	if err := json.Unmarshal([]byte(h.ok("show", id, "--json")), &j); err != nil {
		h.t.Fatalf("show %s: %v", id, err)
	}
	return j
}

func (h *pgHost) list() []pgJob {
	h.t.Helper()
	var js []pgJob
	if err := json.Unmarshal([]byte(h.ok("list", "--json", "--limit", "0")), &js); err != nil {
		h.t.Fatalf("list: %v", err)
	}
	return js
}

// enqueueFile enqueues n jobs <prefix>0000… in one batch (enqueue --file);
// command(i) is job i's command.
func (h *pgHost) enqueueFile(prefix string, n int, command func(i int) string) {
	h.t.Helper()
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, `{"id":"%s%04d","command":%q}`+"\n", prefix, i, command(i))
	}
	path := filepath.Join(h.t.TempDir(), "jobs.jsonl")
	writeFile(h.t, path, b.String())
	if ids := strings.Fields(h.ok("enqueue", "--file", path)); len(ids) != n {
		h.t.Fatalf("enqueued %d jobs, want %d", len(ids), n)
	}
}

// waitCounts polls status --json (through run, at most every 200ms, so
// that the polling processes do not compete much with the workers) until
// cond holds for the job counts. Failed status calls (a server restarting)
// count as not yet.
func waitCounts(t *testing.T, run func(args ...string) (string, string, int), what string, timeout time.Duration,
	cond func(map[string]int) bool) {
	t.Helper()
	var last string
	var next time.Time
	defer func() {
		if t.Failed() {
			t.Logf("last status: %s", last)
		}
	}()
	waitFor(t, what, timeout, func() bool {
		if time.Now().Before(next) {
			return false
		}
		next = time.Now().Add(200 * time.Millisecond)
		out, errOut, code := run("status", "--json")
		if code != 0 {
			last = errOut
			return false
		}
		last = out
		var s struct {
			Jobs map[string]int `json:"jobs"`
		}
		return json.Unmarshal([]byte(out), &s) == nil && cond(s.Jobs)
	})
}

func (h *pgHost) waitAll(state string, n int, timeout time.Duration) {
	h.t.Helper()
	waitCounts(h.t, h.run, fmt.Sprintf("%d jobs %s", n, state), timeout, func(c map[string]int) bool { return c[state] == n })
}

func (h *pgHost) waitState(id, state string, timeout time.Duration) pgJob {
	h.t.Helper()
	var j pgJob
	var next time.Time
	waitFor(h.t, id+" to be "+state, timeout, func() bool {
		if time.Now().Before(next) {
			return false
		}
		next = time.Now().Add(100 * time.Millisecond)
		j = h.job(id)
		return j.State == state
	})
	return j
}

// logErrors returns the error lines of the host's worker logs.
func (h *pgHost) logErrors() []string {
	logs, _ := filepath.Glob(filepath.Join(h.home, "logs", "*.log"))
	var errs []string
	for _, l := range logs {
		b, _ := os.ReadFile(l)
		for _, line := range strings.Split(string(b), "\n") {
			if strings.Contains(line, `"level":"error"`) {
				errs = append(errs, filepath.Base(l)+": "+line)
			}
		}
	}
	return errs
}

// workerHost is the host part of a worker id (host:pid:random).
func workerHost(worker string) string {
	host, _, _ := strings.Cut(worker, ":")
	return host
}

// workerPID is the pid part of a worker id (host:pid:random).
func workerPID(worker string) int {
	parts := strings.Split(worker, ":")
	if len(parts) < 3 {
		return 0
	}
	pid, _ := strconv.Atoi(parts[len(parts)-2])
	return pid
}

// Four hosts with two worker processes each share 2,000 jobs: every job
// runs exactly once, on its first attempt, and every host takes part.
func TestE2EPostgresMultiHost(t *testing.T) {
	_, db := newPGSchema(t)
	side := filepath.Join(t.TempDir(), "ran.txt")
	var hosts []*pgHost
	for i := range 4 {
		h := newPGHost(t, db, fmt.Sprintf("host-%c", 'a'+i))
		if pids := h.startWorkers("--count", "2", "--lease", "3s"); len(pids) != 2 {
			t.Fatalf("%s: worker start printed %v", h.name, pids)
		}
		hosts = append(hosts, h)
	}
	var ws []any
	json.Unmarshal([]byte(hosts[3].ok("worker", "list", "--json")), &ws)
	if len(ws) != 8 {
		t.Fatalf("%d workers registered, want 8", len(ws))
	}
	const n = 2000
	hosts[0].enqueueFile("j", n, func(int) string { return appendIDCommand(side) })
	hosts[1].waitAll("completed", n, 180*time.Second)
	checkRanOnce(t, side, n)
	perHost := map[string]int{}
	for _, j := range hosts[2].list() {
		if j.State != "completed" || j.Attempts != 1 || j.Worker == nil {
			t.Errorf("job %s: state %s, %d attempts, worker %v", j.ID, j.State, j.Attempts, j.Worker)
			continue
		}
		perHost[workerHost(*j.Worker)]++
	}
	t.Logf("jobs per host: %v", perHost)
	// Eight workers counted their attempts into the same histogram rows.
	var stats struct {
		Total struct {
			Attempts int `json:"attempts"`
			Failed   int `json:"failed_attempts"`
			LastHour int `json:"completed_last_hour"`
		} `json:"total"`
		Slowest []struct {
			ID string `json:"id"`
		} `json:"slowest"`
	}
	if err := json.Unmarshal([]byte(hosts[3].ok("stats", "--json")), &stats); err != nil {
		t.Fatal(err)
	}
	if stats.Total.Attempts != n || stats.Total.Failed != 0 || stats.Total.LastHour != n || len(stats.Slowest) != 5 {
		t.Errorf("stats: %+v", stats)
	}
	for _, h := range hosts {
		if perHost[h.name] == 0 {
			t.Errorf("%s ran no job", h.name)
		}
		for _, e := range h.logErrors() {
			t.Errorf("%s: %s", h.name, e)
		}
	}
}

// A job whose worker dies on host A is rescued by host B only when its lease
// expires: B cannot see A's processes. The lost attempt's process group is
// left running, as it would be on a real other host, and killed here.
func TestE2EPostgresRescueAfterLeaseExpiry(t *testing.T) {
	_, db := newPGSchema(t)
	a := newPGHost(t, db, "host-a")
	b := newPGHost(t, db, "host-b")
	pgidFile := filepath.Join(t.TempDir(), "pgid")
	a.ok("enqueue", "--id", "victim", "--command",
		fmt.Sprintf(`if [ "$QUEUECTL_ATTEMPT" = 1 ]; then echo $$ > %s; sleep 60; fi; echo ok`, pgidFile))
	pidA := a.startWorkers("--lease", "3s")[0]
	waitFor(t, "the first attempt to start on host A", 20*time.Second, func() bool {
		raw, err := os.ReadFile(pgidFile)
		return err == nil && strings.HasSuffix(string(raw), "\n")
	})
	raw, _ := os.ReadFile(pgidFile)
	pgid, _ := strconv.Atoi(strings.TrimSpace(string(raw)))
	if pgid <= 1 {
		t.Fatalf("no process group recorded: %q", raw)
	}
	t.Cleanup(func() { syscall.Kill(-pgid, syscall.SIGKILL) })

	b.startWorkers("--lease", "3s")
	killed := time.Now()
	if err := syscall.Kill(pidA, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	j := b.waitState("victim", "completed", 30*time.Second)
	if len(j.History) != 2 || j.History[0].Outcome != "lost" || j.History[1].Outcome != "succeeded" {
		t.Fatalf("history: %+v", j.History)
	}
	lost, ok := j.History[0], j.History[1]
	reason := "<no error>"
	if lost.Error != nil {
		reason = *lost.Error
	}
	t.Logf("lost attempt held for %s (killed %s after it started); rescued %s after the kill: %s",
		lost.FinishedAt.Sub(lost.StartedAt).Round(time.Millisecond), killed.Sub(lost.StartedAt).Round(time.Millisecond),
		lost.FinishedAt.Sub(killed).Round(time.Millisecond), reason)
	// The claim's lease ran 3s from the start and heartbeats only extended
	// it; a rescue by process id would have come at B's next scan, within
	// about 2s of the kill.
	if held := lost.FinishedAt.Sub(lost.StartedAt); held < 3*time.Second-10*time.Millisecond {
		t.Errorf("the lost attempt was rescued %s after it started, before its 3s lease could expire", held)
	}
	if !strings.Contains(reason, "lease expired") {
		t.Errorf("lost attempt error %q, want a lease expiry", reason)
	}
	if workerHost(lost.Worker) != "host-a" || workerPID(lost.Worker) != pidA || workerHost(ok.Worker) != "host-b" {
		t.Errorf("attempts ran on %s then %s, want host A's worker %d then host B", lost.Worker, ok.Worker, pidA)
	}
	if out := b.ok("output", "victim"); out != "ok\n" {
		t.Errorf("output %q", out)
	}
	// Host B cannot reach host A's processes: the lost attempt still runs.
	if members, _ := proc.GroupMembers(pgid); len(members) == 0 {
		t.Errorf("the lost attempt's process group %d is gone: another host must not be able to kill it", pgid)
	}
}

// pgCluster returns the version directory of the local cluster that
// pg_ctlcluster manages, or skips.
func pgCluster(t *testing.T) string {
	t.Helper()
	if _, err := exec.LookPath("pg_ctlcluster"); err != nil {
		t.Skip("server restart test skipped: no pg_ctlcluster to restart the server with")
	}
	entries, err := os.ReadDir("/etc/postgresql")
	if err != nil {
		t.Skipf("server restart test skipped: %v", err)
	}
	for _, e := range entries {
		if e.IsDir() {
			return e.Name()
		}
	}
	t.Skip("server restart test skipped: no cluster in /etc/postgresql")
	return ""
}

func pgCtl(version, action string) error {
	out, err := exec.Command("pg_ctlcluster", "--skip-systemctl-redirect", version, "main", action).CombinedOutput()
	if err != nil {
		return fmt.Errorf("pg_ctlcluster %s main %s: %v: %s", version, action, err, out)
	}
	return nil
}

// jobRun is one run of a job's command, from the side-effect file.
type jobRun struct{ start, end int64 } // date +%s%N; end 0 if it never ended

// readJobRuns parses "S id ns" and "E id ns" lines (file order is write order)
// into each job's runs, and reports a run that began while another run of
// the same job was going.
func readJobRuns(t *testing.T, file string) map[string][]jobRun {
	t.Helper()
	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	runs := map[string][]jobRun{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) != 3 {
			t.Fatalf("bad line %q", sc.Text())
		}
		id := fields[1]
		ns, _ := strconv.ParseInt(fields[2], 10, 64)
		rs := runs[id]
		open := len(rs) > 0 && rs[len(rs)-1].end == 0
		switch fields[0] {
		case "S":
			if open {
				t.Errorf("job %s started again at %d while its run from %d was going", id, ns, rs[len(rs)-1].start)
			}
			runs[id] = append(rs, jobRun{start: ns})
		case "E":
			if !open {
				t.Errorf("job %s: an end without a start", id)
				continue
			}
			rs[len(rs)-1].end = ns
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return runs
}

// A stop signal ends a service whose reload waits on the database: here
// another session holds a lock on the queues table the reload writes.
func TestE2EPostgresStopDuringReload(t *testing.T) {
	schema, db := newPGSchema(t)
	c := newCLI(t)
	cfg := filepath.Join(c.home, "queue.hcl")
	writeFile(t, cfg, "database = \""+db+"\"\nqueue \"default\" { concurrency = 1 }\n")
	svc := c.startService("-c", cfg)
	waitFor(t, "the service to start", 20*time.Second, func() bool { return strings.Contains(svc.log(), "service started") })

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	locker, err := pgx.Connect(ctx, pgBaseURL(t))
	if err != nil {
		t.Fatal(err)
	}
	defer locker.Close(context.Background())
	tx, err := locker.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(context.Background())
	if _, err := tx.Exec(ctx, "LOCK TABLE "+schema+".queues IN ACCESS EXCLUSIVE MODE"); err != nil {
		t.Fatal(err)
	}
	writeFile(t, cfg, "database = \""+db+"\"\nqueue \"default\" { concurrency = 2 }\n")
	svc.signal(syscall.SIGHUP)
	waitFor(t, "the reload to wait for the lock", 20*time.Second, func() bool {
		var n int
		err := tx.QueryRow(ctx, `SELECT count(*) FROM pg_locks l JOIN pg_class c ON c.oid = l.relation
			JOIN pg_namespace n ON n.oid = c.relnamespace WHERE NOT l.granted AND c.relname = 'queues' AND n.nspname = $1`, schema).Scan(&n)
		return err == nil && n > 0
	})
	svc.signal(syscall.SIGTERM)
	if err := svc.wait(10 * time.Second); err != nil {
		t.Fatalf("service exit: %v\n%s", err, svc.log())
	}
}

// A server restart under three busy workers loses no job, runs none twice
// at once, and the same worker processes carry on: their pools and wake-up
// listeners reconnect. It restarts the shared server, which would break
// other packages' PostgreSQL tests running at the same time, so it runs
// only on request, alone (.ci/run does).
func TestE2EPostgresServerRestart(t *testing.T) {
	if os.Getenv("QUEUECTL_TEST_PG_RESTART") != "1" {
		t.Skip("server restart test skipped: it restarts the shared PostgreSQL server, breaking other tests that use it; " +
			"run it alone with QUEUECTL_TEST_PG_RESTART=1")
	}
	version := pgCluster(t)
	base := pgBaseURL(t)
	schema, db := newPGSchema(t)
	h := newPGHost(t, db, "restart-host")
	t.Cleanup(func() {
		// Whatever happened, the server is up again before the workers are
		// stopped and the schema dropped, and for whatever runs next.
		if pgTestExec(base, "SELECT 1") != nil {
			if err := pgCtl(version, "start"); err != nil {
				t.Errorf("start the server again: %v", err)
			}
			waitFor(t, "the server to accept connections", 30*time.Second, func() bool { return pgTestExec(base, "SELECT 1") == nil })
		}
	})
	side := filepath.Join(t.TempDir(), "runs.txt")
	record := func(sleep string) string {
		return fmt.Sprintf(`echo "S $QUEUECTL_JOB_ID $(date +%%s%%N)" >> %[1]s; sleep %[2]s; echo "E $QUEUECTL_JOB_ID $(date +%%s%%N)" >> %[1]s`,
			side, sleep)
	}
	// A long poll, so that jobs starting promptly after the restart show the
	// wake-up listeners came back (an idle worker would otherwise sleep 10s).
	pids := h.startWorkers("--count", "3", "--lease", "10s", "--poll", "10s")
	if len(pids) != 3 {
		t.Fatalf("worker start printed %v", pids)
	}
	listeners := func() int {
		n, _ := pgTestQueryInt(base, `SELECT count(*) FROM pg_stat_activity WHERE application_name = $1`, schema+"-listen")
		return n
	}
	waitFor(t, "3 wake-up listeners", 10*time.Second, func() bool { return listeners() == 3 })

	const n = 300
	h.enqueueFile("r", n, func(i int) string { return record(fmt.Sprintf("0.0%d", 2+i%4)) }) // 20–50 ms
	done := 0
	waitCounts(t, h.run, "some jobs to complete", 60*time.Second, func(c map[string]int) bool {
		done = c["completed"]
		return done >= 30
	})
	restarted := time.Now()
	if err := pgCtl(version, "restart"); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the server to accept connections", 30*time.Second, func() bool { return pgTestExec(base, "SELECT 1") == nil })
	back := time.Now()
	t.Logf("restarted the server in %s, %d of %d jobs completed before", back.Sub(restarted).Round(time.Millisecond), done, n)
	if done >= n {
		t.Fatalf("all jobs finished before the restart: the test proves nothing")
	}
	h.waitAll("completed", n, 120*time.Second)
	t.Logf("all %d jobs completed %s after the restart began", n, time.Since(restarted).Round(time.Millisecond))

	runs := readJobRuns(t, side)
	again := 0
	for i := range n {
		id := fmt.Sprintf("r%04d", i)
		switch rs := runs[id]; {
		case len(rs) == 0:
			t.Errorf("job %s never ran", id)
		case len(rs) > 1:
			again++ // at-least-once: an outcome lost in the restart
			t.Logf("job %s ran %d times (one after the other)", id, len(rs))
		}
	}
	if len(runs) != n {
		t.Errorf("%d distinct jobs ran, want %d", len(runs), n)
	}
	t.Logf("%d job(s) ran more than once, none at the same time", again)

	// The same processes are alive, registered, and take new work promptly.
	for _, w := range h.workers {
		if !proc.Alive(w.pid, w.start) {
			t.Fatalf("worker %d died in the restart; its log:\n%s", w.pid, workerLogTail(h, w.pid))
		}
	}
	var regPIDs []int
	var next time.Time
	waitFor(t, "every worker to heartbeat after the restart", 15*time.Second, func() bool {
		if time.Now().Before(next) {
			return false
		}
		next = time.Now().Add(200 * time.Millisecond)
		var registered []struct {
			PID         int       `json:"pid"`
			HeartbeatAt time.Time `json:"heartbeat_at"`
		}
		json.Unmarshal([]byte(h.ok("worker", "list", "--json")), &registered)
		regPIDs = nil
		fresh := true
		for _, w := range registered {
			regPIDs = append(regPIDs, w.PID)
			fresh = fresh && w.HeartbeatAt.After(back)
		}
		return fresh && len(registered) == len(pids)
	})
	sort.Ints(regPIDs)
	if want := slices.Sorted(slices.Values(pids)); !slices.Equal(regPIDs, want) {
		t.Fatalf("registered workers %v, want the original %v", regPIDs, want)
	}
	waitFor(t, "the 3 wake-up listeners to reconnect", 15*time.Second, func() bool { return listeners() == 3 })
	h.enqueueFile("after", 20, func(int) string { return record("0.2") })
	h.waitAll("completed", n+20, 60*time.Second)
	byPID := map[int]int{}
	for _, j := range h.list() {
		if !strings.HasPrefix(j.ID, "after") {
			continue
		}
		if j.Attempts != 1 || j.Worker == nil || j.StartedAt == nil {
			t.Errorf("job %s after the restart: %d attempts, worker %v", j.ID, j.Attempts, j.Worker)
			continue
		}
		byPID[workerPID(*j.Worker)]++
		// Enqueued to idle workers polling every 10s: only a wake-up starts
		// the first jobs at once.
		if wait := j.StartedAt.Sub(j.CreatedAt); wait > 5*time.Second {
			t.Errorf("job %s waited %s to start after the restart", j.ID, wait)
		}
	}
	for _, pid := range pids {
		if byPID[pid] == 0 {
			t.Errorf("worker %d ran none of the jobs enqueued after the restart (ran: %v); its log:\n%s", pid, byPID, workerLogTail(h, pid))
		}
	}
	for _, rs := range runs {
		for _, r := range rs {
			if r.end == 0 {
				t.Errorf("a run never ended: %+v", r)
			}
		}
	}
	var msgs []string
	for _, w := range h.workers {
		b, _ := os.ReadFile(filepath.Join(h.home, "logs", fmt.Sprintf("worker-%d.log", w.pid)))
		for _, line := range strings.Split(string(b), "\n") {
			if strings.Contains(line, `"level":"warn"`) || strings.Contains(line, `"level":"error"`) {
				msgs = append(msgs, line)
			}
		}
	}
	t.Logf("%d warning/error lines in the worker logs; first few:\n%s", len(msgs), strings.Join(msgs[:min(len(msgs), 8)], "\n"))
}

// workerLogTail is the end of one worker's log.
func workerLogTail(h *pgHost, pid int) string {
	b, _ := os.ReadFile(filepath.Join(h.home, "logs", fmt.Sprintf("worker-%d.log", pid)))
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	return strings.Join(lines[max(0, len(lines)-20):], "\n")
}

// TestThroughputByWorkerCount measures jobs per second by worker count for
// docs/postgres.md. It is slow and runs only on request:
//
//	QUEUECTL_THROUGHPUT=1 TEST_DATABASE_URL=postgres://… go test -run TestThroughputByWorkerCount -v -timeout 30m ./cmd/queuectl/
//
// Each run starts N idle worker processes on an empty queue, enqueues 2,000
// `true` jobs in one batch and waits for them; throughput is 2,000 over the
// span from the first job's start to the last job's finish, from the jobs'
// own timestamps. It runs on SQLite, on PostgreSQL, and on PostgreSQL with
// synchronous_commit=off (to show what waiting for the WAL flush of every
// commit costs; not a recommendation). The stores alternate run by run, so
// that a disturbance of the machine hits all alike. Each figure is the
// median of QUEUECTL_THROUGHPUT_RUNS runs (default 3). Beside it, the CPU
// time per job of the worker processes (with the job shells they reaped)
// and of the queue's PostgreSQL backends, which bounds what the machine's
// cores can reach.
func TestThroughputByWorkerCount(t *testing.T) {
	if os.Getenv("QUEUECTL_THROUGHPUT") != "1" {
		t.Skip("throughput measurement skipped: set QUEUECTL_THROUGHPUT=1 to run it")
	}
	base := pgBaseURL(t)
	const jobs = 2000
	runs := 3
	if r, err := strconv.Atoi(os.Getenv("QUEUECTL_THROUGHPUT_RUNS")); err == nil && r > 0 {
		runs = r
	}
	counts := []int{1, 2, 4, 8}
	type store struct {
		name string
		db   func(t *testing.T) (app, db string) // app: application_name of its backends
	}
	stores := []store{
		{"SQLite", func(*testing.T) (string, string) { return "", "" }}, // the home's queue.db
		{"PostgreSQL", func(t *testing.T) (string, string) { return newPGSchema(t) }},
		{"PostgreSQL, synchronous_commit=off", func(t *testing.T) (string, string) {
			schema, db := newPGSchema(t)
			return schema, db + "&synchronous_commit=off"
		}},
	}
	backends := func(app string) []int {
		if app == "" {
			return nil
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		c, err := pgx.Connect(ctx, base)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close(context.Background())
		rows, _ := c.Query(ctx, `SELECT pid FROM pg_stat_activity WHERE application_name IN ($1, $1 || '-listen')`, app)
		pids, err := pgx.CollectRows(rows, pgx.RowTo[int32])
		if err != nil {
			t.Fatal(err)
		}
		var out []int
		for _, p := range pids {
			out = append(out, int(p))
		}
		return out
	}
	type sample struct{ rate, shellMS, workerMS, pgMS float64 } // jobs/s; CPU ms per job
	measure := func(t *testing.T, s store, workers int) sample {
		app, db := s.db(t)
		h := newPGHost(t, db, "bench")
		pids := h.startWorkers("--count", strconv.Itoa(workers))
		w0, pg0 := cpuTicks(pids), cpuTicks(backends(app))
		h.enqueueFile("t", jobs, func(int) string { return "true" })
		h.waitAll("completed", jobs, 10*time.Minute)
		w1, pg1 := cpuTicks(pids), cpuTicks(backends(app))
		var first, last time.Time
		for _, j := range h.list() {
			if j.StartedAt == nil || j.FinishedAt == nil {
				t.Fatalf("job %s has no start or finish", j.ID)
			}
			if first.IsZero() || j.StartedAt.Before(first) {
				first = *j.StartedAt
			}
			if j.FinishedAt.After(last) {
				last = *j.FinishedAt
			}
		}
		h.ok("worker", "stop")
		perJob := func(before, after map[int][2]uint64, i int) float64 {
			var ticks uint64
			for pid, v := range after {
				ticks += v[i] - min(v[i], before[pid][i])
			}
			return float64(ticks) * 10 / jobs // 100 ticks per second
		}
		return sample{jobs / last.Sub(first).Seconds(), perJob(w0, w1, 1), perJob(w0, w1, 0), perJob(pg0, pg1, 0)}
	}
	median := func(xs []sample) sample {
		if len(xs) == 0 {
			t.Fatal("no run succeeded")
		}
		s := slices.SortedFunc(slices.Values(xs), func(a, b sample) int { return cmp.Compare(a.rate, b.rate) })
		return s[len(s)/2]
	}
	result := map[string]map[int]sample{}
	for _, s := range stores {
		result[s.name] = map[int]sample{}
	}
	for _, w := range counts {
		xs := map[string][]sample{}
		for r := range runs {
			for _, s := range stores {
				t.Run(fmt.Sprintf("%s/%d/%d", s.name, w, r), func(t *testing.T) {
					xs[s.name] = append(xs[s.name], measure(t, s, w))
				})
			}
		}
		for _, s := range stores {
			result[s.name][w] = median(xs[s.name])
			var rs []string
			for _, x := range xs[s.name] {
				rs = append(rs, fmt.Sprintf("%.0f jobs/s (CPU ms per job: shells %.2f, workers %.2f, PostgreSQL %.2f)",
					x.rate, x.shellMS, x.workerMS, x.pgMS))
			}
			t.Logf("%s, %d worker(s): median %.0f jobs/s; runs: %s", s.name, w, result[s.name][w].rate, strings.Join(rs, "; "))
		}
	}
	var b strings.Builder
	b.WriteString("\n| Workers |")
	for _, s := range stores {
		fmt.Fprintf(&b, " %s jobs/s (vs 1 worker) | CPU ms/job: shells + workers + PostgreSQL |", s.name)
	}
	b.WriteString(" PostgreSQL / SQLite |\n|---|")
	for range stores {
		b.WriteString("---|---|")
	}
	b.WriteString("---|\n")
	for _, w := range counts {
		fmt.Fprintf(&b, "| %d |", w)
		for _, s := range stores {
			r := result[s.name][w]
			fmt.Fprintf(&b, " %.0f (%.2f×) | %.2f + %.2f + %.2f |", r.rate, r.rate/result[s.name][1].rate, r.shellMS, r.workerMS, r.pgMS)
		}
		fmt.Fprintf(&b, " %.2f |\n", result["PostgreSQL"][w].rate/result["SQLite"][w].rate)
	}
	t.Log(b.String())
}

// cpuTicks reads each process's CPU time and that of its reaped children
// (utime+stime, cutime+cstime of /proc/PID/stat), in clock ticks.
func cpuTicks(pids []int) map[int][2]uint64 {
	out := map[int][2]uint64{}
	for _, pid := range pids {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			continue
		}
		i := strings.LastIndexByte(string(b), ')')
		fields := strings.Fields(string(b)[i+1:]) // from field 3, state
		if len(fields) < 15 {
			continue
		}
		var v [4]uint64
		for i, f := range fields[11:15] {
			v[i], _ = strconv.ParseUint(f, 10, 64)
		}
		out[pid] = [2]uint64{v[0] + v[1], v[2] + v[3]}
	}
	return out
}

// A password in the database URL stays out of what other users and jobs can
// read: detached workers' arguments (ps), the jobs' environment, the logs.
func TestE2EPostgresPasswordStaysSecret(t *testing.T) {
	_, db := newPGSchema(t)
	u, err := url.Parse(db)
	if err != nil {
		t.Fatal(err)
	}
	const secret = "s3cret-pw"
	u.User = url.UserPassword(u.User.Username(), secret) // the test server trusts local connections
	h := newPGHost(t, u.String(), "host-a")
	envFile := filepath.Join(t.TempDir(), "env.txt")
	h.ok("enqueue", fmt.Sprintf(`{"id":"env","command":"env > %s"}`, envFile))
	pids := h.startWorkers("--count", "1")
	h.waitState("env", "completed", 30*time.Second)
	cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pids[0]))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(cmdline), secret) {
		t.Errorf("the worker's arguments show the password: %q", cmdline)
	}
	env, err := os.ReadFile(envFile)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(env), secret) {
		t.Errorf("the job's environment holds the password")
	}
	if !strings.Contains(string(env), "QUEUECTL_DB=postgres://") {
		t.Errorf("the job's environment should name the database (without password): %s", env)
	}
	logs, _ := filepath.Glob(filepath.Join(h.home, "logs", "*.log"))
	for _, l := range logs {
		if b, _ := os.ReadFile(l); strings.Contains(string(b), secret) {
			t.Errorf("%s holds the password", l)
		}
	}
}
