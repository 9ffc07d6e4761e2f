package main

// The kill-loop test: workers and enqueue processes of the real binary are
// killed with SIGKILL at random moments (claiming, running, recording an
// outcome, inserting), round after round, on SQLite and on PostgreSQL.
// After each round, once the survivors have finished every job, it checks:
// every job whose enqueue printed its id is stored exactly once and
// completed, no job ran while another attempt of it still ran (each
// attempt holds a lock on a file of its job: an attempt that finds it held
// records an overlap), and SQLite passes PRAGMA integrity_check.
//
// CI deals a bounded number of kills per store; QUEUECTL_KILLLOOP_KILLS=N
// deals N (docs/testing.md).

import (
	"database/sql"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// killLoopCIKills is how many kills each store gets without
// QUEUECTL_KILLLOOP_KILLS: enough to cross every phase several times,
// bounded so that both stores take well under a minute.
const killLoopCIKills = 40

// killsPerRound is how many kills a round deals before the survivors are
// left to finish and the invariants are checked.
const killsPerRound = 16

// jobsPerRound bounds the jobs a round's enqueuers add (the kills go on
// after they stop). The survivors' work to settle a round is set by its
// jobs, a quarter of which run for 3 s on six slots: unbounded, a faster
// enqueue made rounds of 900 jobs, two minutes of work. 400 take about
// one minute at most.
const jobsPerRound = 400

func TestKillLoop(t *testing.T) {
	kills := killLoopCIKills
	if s := os.Getenv("QUEUECTL_KILLLOOP_KILLS"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			t.Fatalf("QUEUECTL_KILLLOOP_KILLS=%q: want a positive number of kills", s)
		}
		kills = n
	}
	t.Run("SQLite", func(t *testing.T) {
		c := newCLI(t)
		path := filepath.Join(c.home, "killloop.db")
		k := &killLoop{t: t, kills: kills, dir: t.TempDir(), cmd: func(args ...string) *exec.Cmd {
			cmd := c.cmd(args...)
			cmd.Env = append(cmd.Env, "QUEUECTL_DB="+path)
			return cmd
		}}
		k.check = func() { sqliteIntegrity(t, path) }
		k.run()
	})
	t.Run("PostgreSQL", func(t *testing.T) {
		_, db := newPGSchema(t)
		h := newPGHost(t, db, "killloop")
		k := &killLoop{t: t, kills: kills, dir: t.TempDir(), cmd: h.cmd, check: func() {}}
		k.run()
	})
}

// killLoop is one store's loop.
type killLoop struct {
	t     *testing.T
	kills int
	dir   string // locks/, runs, overlaps
	cmd   func(args ...string) *exec.Cmd
	check func() // store-specific check after each round

	mu    sync.Mutex
	live  map[*exec.Cmd]string // processes that may be killed, by kind
	acked map[string]bool      // ids an enqueue printed
	dealt map[string]int       // kills by kind
	next  int                  // next job number
	last  int                  // the round's enqueuers stop before this job number
}

// The processes a loop keeps alive: workers of two slots each, and
// enqueuers that each add one job per process.
const (
	killLoopWorkers   = 3
	killLoopEnqueuers = 4
)

func (k *killLoop) run() {
	t := k.t
	k.live, k.acked, k.dealt = map[*exec.Cmd]string{}, map[string]bool{}, map[string]int{}
	if err := os.MkdirAll(filepath.Join(k.dir, "locks"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(k.showWorkerLogs)
	// Lost attempts retry after at most a second and never run out.
	for _, kv := range [][2]string{{"max-retries", "1000"}, {"max-backoff", "1s"}} {
		if out, err := k.cmd("config", "set", kv[0], kv[1]).CombinedOutput(); err != nil {
			t.Fatalf("config set %s: %v: %s", kv[0], err, out)
		}
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	defer func() {
		close(stop)
		k.killAll()
		wg.Wait()
	}()
	for i := range killLoopWorkers {
		wg.Add(1)
		go func() { defer wg.Done(); k.keepRunning(stop, "worker", i) }()
	}
	start := time.Now()
	for round := 0; k.total() < k.kills; round++ {
		enqStop := make(chan struct{})
		var enq sync.WaitGroup
		k.mu.Lock()
		k.last = k.next + jobsPerRound
		k.mu.Unlock()
		for i := range killLoopEnqueuers {
			enq.Add(1)
			go func() { defer enq.Done(); k.keepRunning(enqStop, "enqueue", i) }()
		}
		for n := 0; n < killsPerRound && k.total() < k.kills; {
			time.Sleep(time.Duration(10+rand.IntN(250)) * time.Millisecond) // a random moment, not a wait
			if k.killOne() {
				n++
			}
		}
		close(enqStop)
		enq.Wait()
		k.settle(round)
	}
	if len(k.acked) == 0 {
		t.Fatal("no enqueue lived to be acknowledged: the loop checked nothing")
	}
	t.Logf("%d kills (%v) in %s; %d acknowledged jobs, all completed once, no overlap",
		k.total(), k.dealt, time.Since(start).Round(time.Millisecond), len(k.acked))
}

// showWorkerLogs logs the end of each worker's log when the test failed
// (killAll has then made the live workers write their goroutines there):
// a round that never settles is otherwise a bare timeout.
func (k *killLoop) showWorkerLogs() {
	if !k.t.Failed() {
		return
	}
	logs, _ := filepath.Glob(filepath.Join(k.dir, "worker-*.log"))
	for _, name := range logs {
		b, err := os.ReadFile(name)
		if err != nil {
			continue
		}
		lines := strings.Split(strings.TrimSpace(string(b)), "\n")
		k.t.Logf("%s, last lines:\n%s", filepath.Base(name), strings.Join(lines[max(0, len(lines)-400):], "\n"))
	}
}

// keepRunning runs processes of one kind until stop: workers are started
// again when they die; enqueuers add one job per process.
func (k *killLoop) keepRunning(stop <-chan struct{}, kind string, i int) {
	for {
		select {
		case <-stop:
			return
		default:
		}
		var c *exec.Cmd
		var id string
		switch kind {
		case "worker":
			c = k.cmd("worker", "run", "--slots", "2", "--lease", "2s", "--poll", "100ms", "--kill-grace", "100ms",
				"--log-level", "warn")
			log, err := os.OpenFile(filepath.Join(k.dir, fmt.Sprintf("worker-%d.log", i)), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
			if err != nil {
				k.t.Errorf("worker log: %v", err)
				return
			}
			c.Stderr = log
		case "enqueue":
			k.mu.Lock()
			n := k.next
			if n >= k.last {
				k.mu.Unlock()
				return
			}
			k.next++
			k.mu.Unlock()
			id = fmt.Sprintf("kl-%06d", n)
			c = k.cmd("enqueue", "--id", id, "--command", k.jobCommand(n))
		}
		var out strings.Builder
		c.Stdout = &out
		k.mu.Lock()
		err := c.Start()
		if err == nil {
			k.live[c] = kind
		}
		k.mu.Unlock()
		if err != nil {
			k.t.Errorf("start %s: %v", kind, err)
			return
		}
		err = c.Wait()
		k.mu.Lock()
		delete(k.live, c)
		if kind == "enqueue" && err == nil && strings.TrimSpace(out.String()) == id {
			k.acked[id] = true
		}

		k.mu.Unlock()
		if f, ok := c.Stderr.(*os.File); ok {
			f.Close()
		}
	}
}

// jobCommand is job n's command: it takes its job's lock without waiting
// and records an overlap when another attempt still holds it. The lock is
// held by the shell and the sleep it leaves behind, so an attempt whose
// worker was killed holds it until its processes are gone. Every fourth
// job runs for 3 s, longer than a rescue and a retry delay take, so that
// its leftovers would still run if nobody stopped them.
func (k *killLoop) jobCommand(n int) string {
	run := "0.1"
	if n%4 == 0 {
		run = "3"
	}
	return fmt.Sprintf(`exec 9>>%[1]s/locks/"$QUEUECTL_JOB_ID"; `+
		`flock -n 9 || echo "$QUEUECTL_JOB_ID $QUEUECTL_ATTEMPT" >>%[1]s/overlaps; `+
		`echo "$QUEUECTL_JOB_ID $QUEUECTL_ATTEMPT" >>%[1]s/runs; sleep %[2]s`, k.dir, run)
}

// killOne kills a random live process: a worker two times in three, so
// that most enqueues live to be acknowledged.
func (k *killLoop) killOne() bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	kind := "worker"
	if rand.IntN(3) == 0 {
		kind = "enqueue"
	}
	var cands []*exec.Cmd
	for c, kd := range k.live {
		if kd == kind {
			cands = append(cands, c)
		}
	}
	if len(cands) == 0 {
		return false
	}
	c := cands[rand.IntN(len(cands))]
	if c.Process.Signal(syscall.SIGKILL) != nil {
		return false // it had exited already
	}
	k.dealt[kind]++
	delete(k.live, c)
	return true
}

func (k *killLoop) killAll() {
	k.mu.Lock()
	defer k.mu.Unlock()
	sig := syscall.SIGKILL
	if k.t.Failed() {
		sig = syscall.SIGQUIT // each Go process writes its goroutines to its log as it dies
	}
	for c := range k.live {
		c.Process.Signal(sig)
	}
}

func (k *killLoop) total() int {
	k.mu.Lock()
	defer k.mu.Unlock()
	n := 0
	for _, d := range k.dealt {
		n += d
	}
	return n
}

// settle waits until the surviving workers have finished every stored job,
// then checks the round's invariants.
func (k *killLoop) settle(round int) {
	t := k.t
	t.Helper()
	run := func(args ...string) (string, string, int) { return runProcess(t, k.cmd(args...)) }
	waitCounts(t, run, fmt.Sprintf("round %d: every job completed", round), 2*time.Minute, func(c map[string]int) bool {
		return c["pending"]+c["processing"]+c["failed"] == 0
	})
	out, errOut, code := run("list", "--json", "--limit", "0")
	if code != 0 {
		t.Fatalf("list: exit %d: %s", code, errOut)
	}
	var jobs []pgJob
	if err := json.Unmarshal([]byte(out), &jobs); err != nil {
		t.Fatalf("list: %v", err)
	}
	seen := map[string]int{}
	for _, j := range jobs {
		seen[j.ID]++
		if j.State != "completed" {
			t.Errorf("round %d: job %s is %s, want completed", round, j.ID, j.State)
		}
	}
	k.mu.Lock()
	for id := range k.acked {
		if seen[id] != 1 {
			t.Errorf("round %d: acknowledged job %s stored %d times, want once", round, id, seen[id])
		}
	}
	k.mu.Unlock()
	if b, err := os.ReadFile(filepath.Join(k.dir, "overlaps")); err == nil && len(b) > 0 {
		t.Errorf("round %d: attempts that started while another attempt of their job still ran (job attempt):\n%s", round, b)
	}
	k.check()
	if t.Failed() {
		t.FailNow()
	}
}

// sqliteIntegrity runs PRAGMA integrity_check on the database file, read-only.
func sqliteIntegrity(t *testing.T, path string) {
	t.Helper()
	db, err := sql.Open("sqlite3", "file:"+path+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var res string
	if err := db.QueryRow("PRAGMA integrity_check").Scan(&res); err != nil || res != "ok" {
		t.Fatalf("integrity_check: %q, %v", res, err)
	}
}
