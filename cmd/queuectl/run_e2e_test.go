package main

import (
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/queuectl/queuectl/internal/testutil/syncbuf"
)

// service is a `queuectl run` process under test; its output is collected
// in logs.
type serviceProc struct {
	t    *testing.T
	cmd  *exec.Cmd
	logs syncbuf.Buffer
	done chan error
}

func (s *serviceProc) log() string { return s.logs.String() }

func (c *cli) startService(args ...string) *serviceProc {
	c.t.Helper()
	return c.startServiceEnv(nil, args...)
}

// startServiceEnv starts `queuectl run` with extra environment variables
// and waits until it says it started (its database exists then, for the
// commands that read it) or exits.
func (c *cli) startServiceEnv(env []string, args ...string) *serviceProc {
	c.t.Helper()
	s := c.launchService(env, args...)
	waitFor(c.t, "the service to start or exit", 20*time.Second, func() bool {
		if strings.Contains(s.log(), `"message":"service started"`) {
			return true
		}
		select {
		case err := <-s.done:
			s.done <- err
			return true
		default:
			return false
		}
	})
	return s
}

// launchService starts `queuectl run` and returns at once.
func (c *cli) launchService(env []string, args ...string) *serviceProc {
	c.t.Helper()
	s := &serviceProc{t: c.t, cmd: c.cmd(append([]string{"run", "--log-format", "json"}, args...)...), done: make(chan error, 1)}
	s.cmd.Env = append(s.cmd.Env, env...)
	s.cmd.Stdout, s.cmd.Stderr = &s.logs, &s.logs
	if err := s.cmd.Start(); err != nil {
		c.t.Fatal(err)
	}
	go func() { s.done <- s.cmd.Wait() }()
	c.t.Cleanup(func() {
		s.cmd.Process.Signal(syscall.SIGKILL)
		<-s.done
	})
	return s
}

func (s *serviceProc) signal(sig syscall.Signal) {
	s.t.Helper()
	if err := s.cmd.Process.Signal(sig); err != nil {
		s.t.Fatal(err)
	}
}

func (s *serviceProc) wait(timeout time.Duration) error {
	s.t.Helper()
	select {
	case err := <-s.done:
		s.done <- err
		return err
	case <-time.After(timeout):
		s.t.Fatalf("service did not exit within %s; log:\n%s", timeout, s.log())
		return nil
	}
}

func writeFile(t *testing.T, path, body string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
}

// templateJobs lists the jobs a template fired, by scheduled slot.
func (c *cli) templateJobs(name string) []jobView {
	c.t.Helper()
	var out []jobView
	var raw []map[string]any
	body := c.ok("list", "--json", "--limit", "0")
	json.Unmarshal([]byte(body), &raw)
	var all []jobView
	json.Unmarshal([]byte(body), &all)
	for i, r := range raw {
		if r["template"] == name {
			out = append(out, all[i])
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

func TestE2ERunFiresPerSecondSchedule(t *testing.T) {
	c := newCLI(t)
	cfg := filepath.Join(c.home, "queue.hcl")
	writeFile(t, cfg, `
queue "default" { concurrency = 2 }
job "tick" {
  schedule = "* * * * * *"
  command  = "echo $QUEUECTL_TEMPLATE $QUEUECTL_SCHEDULED_AT"
  overlap  = "allow"
  catch_up = "none"
}
`)
	svc := c.startService("-c", cfg)
	waitFor(t, "5 completed fires", 30*time.Second, func() bool {
		n := 0
		for _, j := range c.templateJobs("tick") {
			if j.State == "completed" {
				n++
			}
		}
		return n >= 5
	})
	svc.signal(syscall.SIGTERM)
	if err := svc.wait(30 * time.Second); err != nil {
		t.Fatalf("service exit: %v\n%s", err, svc.log())
	}
	jobs := c.templateJobs("tick")
	// One job per second, no slot twice, none missing between the first and the last.
	var prev time.Time
	for i, j := range jobs {
		var slot time.Time
		out := c.ok("output", j.ID)
		fields := strings.Fields(out)
		if len(fields) != 2 || fields[0] != "tick" {
			t.Fatalf("job %s output %q: want the template name and slot", j.ID, out)
		}
		slot, _ = time.Parse(time.RFC3339, fields[1])
		if i > 0 && slot.Sub(prev) != time.Second {
			t.Fatalf("slots %v then %v: want one per second", prev, slot)
		}
		prev = slot
	}
	if len(jobs) < 5 {
		t.Fatalf("%d jobs", len(jobs))
	}
}

func TestE2ERunReloadAndGracefulStop(t *testing.T) {
	c := newCLI(t)
	cfg := filepath.Join(c.home, "queue.hcl")
	marker := filepath.Join(c.home, "slow-started")
	writeFile(t, cfg, `
job "slow" {
  schedule = "@every 1h"
  command  = "touch `+marker+`; sleep 1; echo slow done"
}
`)
	svc := c.startService("-c", cfg)
	waitFor(t, "the service to apply the file", 20*time.Second, func() bool {
		return strings.Contains(c.ok("cron", "list"), "slow")
	})

	// An invalid file is refused and the old one kept.
	writeFile(t, cfg, `job "broken" { schedule = "61 * * * *" command = "true" }`)
	svc.signal(syscall.SIGHUP)
	waitFor(t, "the failed reload to be logged", 20*time.Second, func() bool {
		return strings.Contains(svc.log(), "reload failed")
	})
	if list := c.ok("cron", "list"); !strings.Contains(list, "slow") || strings.Contains(list, "broken") {
		t.Fatalf("an invalid reload changed the templates:\n%s", list)
	}

	// A valid file replaces the templates: "slow" stops firing, "fast" starts.
	writeFile(t, cfg, `
job "slow" {
  schedule = "@every 1h"
  command  = "touch `+marker+`; sleep 1; echo slow done"
}
job "fast" {
  schedule = "* * * * * *"
  command  = "true"
  overlap  = "skip"
}
`)
	svc.signal(syscall.SIGHUP)
	waitFor(t, "the reloaded template to fire", 20*time.Second, func() bool {
		return len(c.templateJobs("fast")) > 0
	})

	// The http block takes effect on restart only: a reload that adds one
	// says so, and the reload that puts the file back as the service
	// started says nothing of it.
	jobs, _ := os.ReadFile(cfg)
	reloads := func() int { return strings.Count(svc.log(), "configuration reloaded") }
	warned := func() int {
		return strings.Count(svc.log(), "the http block differs from the one the service started with")
	}
	for _, tc := range []struct {
		file string
		warn int
	}{
		{string(jobs) + "http {\n  listen = \"127.0.0.1:1\"\n}\n", 1},
		{string(jobs), 1},
	} {
		before := reloads()
		writeFile(t, cfg, tc.file)
		svc.signal(syscall.SIGHUP)
		waitFor(t, "the reload to be logged", 20*time.Second, func() bool { return reloads() > before })
		if n := warned(); n != tc.warn {
			t.Fatalf("%d warnings of a changed http block, want %d:\n%s", n, tc.warn, svc.log())
		}
	}

	// A manual trigger runs through the same engine; SIGTERM lets it finish.
	id := strings.TrimSpace(c.ok("cron", "trigger", "slow"))
	waitFor(t, "the triggered job to start", 20*time.Second, func() bool {
		_, err := os.Stat(marker)
		return err == nil
	})
	svc.signal(syscall.SIGTERM)
	if err := svc.wait(30 * time.Second); err != nil {
		t.Fatalf("service exit: %v\n%s", err, svc.log())
	}
	if j := c.job(id); j.State != "completed" {
		t.Fatalf("a job running at SIGTERM should finish: %+v\n%s", j, svc.log())
	}
}

func TestE2EValidate(t *testing.T) {
	c := newCLI(t)
	good, _ := filepath.Abs("../../examples/queue.hcl")
	out := c.ok("validate", "-c", good)
	if !strings.Contains(out, "valid") || !strings.Contains(out, "nightly-backup") {
		t.Fatalf("validate: %q", out)
	}
	bad := filepath.Join(c.home, "bad.hcl")
	writeFile(t, bad, `
queue "q" { concurrency = -1 }
job "a" {
  queue    = "nope"
  schedule = "0 0 30 2 *"
  command  = "true"
  time_zone = "Mars/Olympus"
}
`)
	stdout, stderr, code := c.run("validate", "-c", bad)
	if code != 2 || stdout != "" {
		t.Fatalf("invalid file: exit %d stdout %q", code, stdout)
	}
	for _, want := range []string{"bad.hcl line 2, column 27", "line 4, column 14", "line 5, column 14", "line 7, column 15", "4 error(s)"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("diagnostics lack %q:\n%s", want, stderr)
		}
	}
	// A warning: shown with file and line, and the file is still valid.
	warn := filepath.Join(c.home, "warn.hcl")
	writeFile(t, warn, "job \"r\" {\n  schedule = \"0 * * * *\"\n  command  = \"true\"\n  catch_up = \"all\"\n}\n")
	stdout, stderr, code = c.run("validate", "-c", warn)
	if code != 0 || !strings.Contains(stdout, "is valid") ||
		!strings.Contains(stderr, "Warning: Caught-up runs would be skipped") || !strings.Contains(stderr, "warn.hcl line 4, column 14") {
		t.Fatalf("catch_up = all with overlap = skip: exit %d\nstdout %q\nstderr %q", code, stdout, stderr)
	}
}

func TestE2ECronNextAndList(t *testing.T) {
	c := newCLI(t)
	cfg := filepath.Join(c.home, "queue.hcl")
	writeFile(t, cfg, `
job "nightly" {
  schedule  = "0 2 * * *"
  time_zone = "Europe/Berlin"
  command   = "true"
}
job "off" {
  schedule = "0 3 * * *"
  command  = "true"
  enabled  = false
}
`)
	out, stderr, code := c.run("cron", "next", "nightly", "-n", "3", "-c", cfg)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if code != 0 || len(lines) != 4 || !strings.Contains(lines[1], "02:00:00 CE") || stderr != "" {
		t.Fatalf("cron next: exit %d\n%s\nstderr %q", code, out, stderr)
	}
	// A disabled job's times come with a note that it does not fire.
	out, stderr, code = c.run("cron", "next", "off", "-n", "1", "-c", cfg)
	if code != 0 || !strings.Contains(out, "03:00:00") || !strings.Contains(stderr, "off is disabled (enabled = false)") {
		t.Fatalf("cron next of a disabled job: exit %d\n%s\nstderr %q", code, out, stderr)
	}
	if _, stderr, code := c.run("cron", "next", "nope", "-c", cfg); code != 1 || !strings.Contains(stderr, "nightly") {
		t.Fatalf("unknown template: exit %d %q", code, stderr)
	}
	if list := c.ok("cron", "list", "-c", cfg); !strings.Contains(list, "Europe/Berlin") {
		t.Fatalf("cron list:\n%s", list)
	}
}

func TestE2EEnqueuePicksUpQueueDefaults(t *testing.T) {
	c := newCLI(t)
	cfg := filepath.Join(c.home, "queue.hcl")
	writeFile(t, cfg, `
defaults { timeout = "5m" }
queue "reports" {
  concurrency = 1
  max_retries = 5
}
`)
	// cron trigger -c applies the file like run does; here the file has no
	// jobs, so apply it through a short-lived service instead.
	svc := c.startService("-c", cfg)
	waitFor(t, "the file to be applied", 20*time.Second, func() bool {
		return strings.Contains(svc.log(), "service started")
	})
	svc.signal(syscall.SIGTERM)
	svc.wait(20 * time.Second)
	c.ok("enqueue", "--id", "r1", "--queue", "reports", "--command", "true")
	c.ok("enqueue", "--id", "r2", "--queue", "reports", "--command", "true", "--max-retries", "1")
	c.ok("enqueue", "--id", "o1", "--queue", "other", "--command", "true")
	if j := c.job("r1"); j.MaxRetries != 5 || j.Timeout == nil || *j.Timeout != 300 {
		t.Fatalf("reports job takes the queue's settings: %+v", j)
	}
	if j := c.job("r2"); j.MaxRetries != 1 {
		t.Fatalf("the job's own setting wins: %+v", j)
	}
	if j := c.job("o1"); j.MaxRetries != 3 || j.Timeout != nil {
		t.Fatalf("an undeclared queue takes the store's config: %+v", j)
	}
}

func TestE2ECronTriggerTypoChangesNothing(t *testing.T) {
	c := newCLI(t)
	a, b := filepath.Join(c.home, "a.hcl"), filepath.Join(c.home, "b.hcl")
	writeFile(t, a, "job \"mine\" {\n  schedule = \"@daily\"\n  command = \"true\"\n}\n")
	writeFile(t, b, "job \"other\" {\n  schedule = \"@daily\"\n  command = \"true\"\n}\n")
	c.ok("cron", "trigger", "other", "-c", b)
	if _, _, code := c.run("cron", "trigger", "typo", "-c", a); code != 1 {
		t.Fatalf("unknown template: exit %d, want 1", code)
	}
	if list := c.ok("cron", "list"); !strings.Contains(list, "other") || strings.Contains(list, "mine") {
		t.Fatalf("a failed trigger changed the stored templates:\n%s", list)
	}
	if _, errOut, code := c.run("worker", "start", "--retry-jitter", "2"); code != 2 || !strings.Contains(errOut, "retry-jitter") {
		t.Fatalf("bad worker flag: exit %d %q", code, errOut)
	}
}

// SIGHUPs that come while a reload is under way do not crowd out a SIGTERM
// after them: the service stops. The test holds a reload by making the
// file a FIFO that it writes only once every signal was sent.
func TestE2ERunStopsAfterReloadsPiledUp(t *testing.T) {
	c := newCLI(t)
	cfg := filepath.Join(c.home, "queue.hcl")
	body := "job \"tick\" {\n  schedule = \"@every 1h\"\n  command  = \"true\"\n}\n"
	writeFile(t, cfg, body)
	svc := c.startService("-c", cfg)

	fifo := filepath.Join(c.home, "fifo")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Link(fifo, cfg+".new"); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(cfg+".new", cfg); err != nil {
		t.Fatal(err)
	}
	svc.signal(syscall.SIGHUP)
	var w *os.File
	waitFor(t, "the reload to open the file", 20*time.Second, func() bool {
		var err error
		w, err = os.OpenFile(fifo, os.O_WRONLY|syscall.O_NONBLOCK, 0)
		return err == nil
	})
	defer w.Close()
	// The reload now waits for the file's content. Each signal is sent
	// once the last was delivered, so that none merges with another.
	for _, sig := range []syscall.Signal{syscall.SIGHUP, syscall.SIGHUP, syscall.SIGHUP, syscall.SIGHUP,
		syscall.SIGHUP, syscall.SIGHUP, syscall.SIGTERM} {
		svc.signal(sig)
		waitFor(t, "the signal to be delivered", 20*time.Second, func() bool { return !signalPending(t, svc.cmd.Process.Pid, sig) })
	}
	writeFile(t, cfg+".new", body)
	if err := os.Rename(cfg+".new", cfg); err != nil {
		t.Fatal(err)
	}
	if _, err := w.WriteString(body); err != nil {
		t.Fatal(err)
	}
	w.Close()
	if err := svc.wait(20 * time.Second); err != nil {
		t.Fatalf("service exit: %v\n%s", err, svc.log())
	}
}

// signalPending reports whether sig is pending for the process pid
// (sent, not yet taken by one of its threads).
func signalPending(t *testing.T, pid int, sig syscall.Signal) bool {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "ShdPnd:"); ok {
			mask, err := strconv.ParseUint(strings.TrimSpace(v), 16, 64)
			if err != nil {
				t.Fatal(err)
			}
			return mask&(1<<(uint(sig)-1)) != 0
		}
	}
	t.Fatalf("no ShdPnd in /proc/%d/status", pid)
	return false
}

// Jobs of worker slots replaced by a reload still finish before the
// service exits on SIGTERM.
func TestE2ERunReloadedQueuesDrainOnStop(t *testing.T) {
	c := newCLI(t)
	cfg := filepath.Join(c.home, "queue.hcl")
	writeFile(t, cfg, "queue \"q1\" {\n  concurrency = 1\n}\n")
	svc := c.startService("-c", cfg)
	waitFor(t, "the service to start", 20*time.Second, func() bool { return strings.Contains(svc.log(), "service started") })
	c.ok("enqueue", "--id", "slow", "--queue", "q1", "--command", "sleep 1; echo done")
	c.waitState("slow", "processing", 20*time.Second)
	writeFile(t, cfg, "queue \"q1\" {\n  concurrency = 2\n}\n")
	svc.signal(syscall.SIGHUP)
	waitFor(t, "the reload", 20*time.Second, func() bool { return strings.Contains(svc.log(), "queues changed") })
	svc.signal(syscall.SIGTERM)
	if err := svc.wait(30 * time.Second); err != nil {
		t.Fatalf("service exit: %v\n%s", err, svc.log())
	}
	if j := c.job("slow"); j.State != "completed" {
		t.Fatalf("a job of the replaced slots must finish before exit: %+v\n%s", j, svc.log())
	}
}

// A reload that changes the queues starts new worker slots while the old
// ones finish their jobs; those jobs still count against the queue's
// concurrency, so a queue of concurrency 1 stays serial across a reload
// that only added another queue.
func TestE2EReloadKeepsQueueConcurrency(t *testing.T) {
	c := newCLI(t)
	cfg := filepath.Join(c.home, "queue.hcl")
	writeFile(t, cfg, "queue \"serial\" {\n  concurrency = 1\n}\n")
	svc := c.startService("-c", cfg)
	c.ok("enqueue", "--id", "first", "--queue", "serial", "--command", "sleep 3")
	c.waitState("first", "processing", 20*time.Second)
	c.ok("enqueue", "--id", "second", "--queue", "serial", "--command", "true")
	writeFile(t, cfg, "queue \"serial\" {\n  concurrency = 1\n}\nqueue \"other\" {}\n")
	svc.signal(syscall.SIGHUP)
	waitFor(t, "the reload", 20*time.Second, func() bool { return strings.Contains(svc.log(), "queues changed") })
	second := c.waitState("second", "completed", 30*time.Second)
	first := c.job("first")
	if first.State != "completed" {
		t.Fatalf("second ran while first was %s: concurrency 1 exceeded\n%s", first.State, svc.log())
	}
	if f := c.job("first"); len(f.History) != 1 || second.StartedAt.Before(f.History[0].FinishedAt) {
		t.Fatalf("second started at %v, before first finished (%+v): concurrency 1 exceeded\n%s", second.StartedAt, f.History, svc.log())
	}
}

// When --grace runs out, the service says so before it stops the jobs
// still running, as a worker does, and puts them back.
func TestE2ERunGraceOverSaysSo(t *testing.T) {
	c := newCLI(t)
	cfg := filepath.Join(c.home, "queue.hcl")
	writeFile(t, cfg, "queue \"default\" {}\n")
	svc := c.startService("-c", cfg, "--grace", "500ms", "--kill-grace", "200ms")
	waitFor(t, "the service to start", 20*time.Second, func() bool { return strings.Contains(svc.log(), "service started") })
	c.ok("enqueue", "--id", "long", "--command", "sleep 60")
	c.waitState("long", "processing", 20*time.Second)
	svc.signal(syscall.SIGTERM)
	if err := svc.wait(20 * time.Second); err != nil {
		t.Fatalf("service exit: %v\n%s", err, svc.log())
	}
	if !strings.Contains(svc.log(), `"message":"grace period over: stopping running jobs"`) {
		t.Fatalf("no log line saying the grace period ran out:\n%s", svc.log())
	}
	if !regexp.MustCompile(`"grace_ms":500,[^}]*"message":"stopping: running jobs may finish`).MatchString(svc.log()) {
		t.Fatalf("the stop line does not say how long running jobs may take:\n%s", svc.log())
	}
	if j := c.job("long"); j.State != "pending" {
		t.Fatalf("a job stopped at the end of the grace period must be put back: %+v", j)
	}
}

// A stop signal ends a service still starting: here its database (a
// listener that accepts connections and never answers) holds the start.
func TestE2ERunStopWhileStarting(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan net.Conn, 8)
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			accepted <- conn
		}
	}()
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT} {
		t.Run(sig.String(), func(t *testing.T) {
			c := newCLI(t)
			cfg := filepath.Join(c.home, "queue.hcl")
			writeFile(t, cfg, "database = \"postgres://queuectl@"+ln.Addr().String()+"/queuectl?sslmode=disable&search_path=silent\"\n")
			svc := c.launchService(nil, "-c", cfg)
			select {
			case conn := <-accepted:
				defer conn.Close()
			case <-time.After(20 * time.Second):
				t.Fatalf("the service never connected; log:\n%s", svc.log())
			}
			svc.signal(sig)
			if err := svc.wait(10 * time.Second); err != nil {
				t.Fatalf("service exit: %v\n%s", err, svc.log())
			}
			if !strings.Contains(svc.log(), `"message":"stopped before the service started"`) {
				t.Fatalf("no log line saying why it stopped:\n%s", svc.log())
			}
		})
	}
}

// worker stop stops the workers `worker start` started, not a `queuectl run`
// service on the same database: the service keeps firing and running jobs.
func TestE2EWorkerStopLeavesServiceRunning(t *testing.T) {
	c := newCLI(t)
	cfg := filepath.Join(c.home, "queue.hcl")
	writeFile(t, cfg, `job "tick" {
  schedule = "@every 1h"
  command  = "true"
}
`)
	svc := c.startService("-c", cfg)
	var ws []struct{ Kind string }
	waitFor(t, "the service to register", 20*time.Second, func() bool {
		json.Unmarshal([]byte(c.ok("worker", "list", "--json")), &ws)
		return len(ws) == 1 && ws[0].Kind == "service"
	})
	c.ok("worker", "start")
	ws = nil
	json.Unmarshal([]byte(c.ok("worker", "list", "--json")), &ws)
	if len(ws) != 2 {
		t.Fatalf("want a service and a worker, got %+v", ws)
	}

	out, errOut, code := c.run("worker", "stop")
	if code != 0 || !strings.Contains(out, "stopped 1 worker(s)") || !strings.Contains(errOut, "leaving 1 queuectl run service(s) running") {
		t.Fatalf("worker stop: exit %d\n%s%s", code, out, errOut)
	}
	ws = nil
	json.Unmarshal([]byte(c.ok("worker", "list", "--json")), &ws)
	if len(ws) != 1 || ws[0].Kind != "service" {
		t.Fatalf("after worker stop: %+v", ws)
	}
	if list := c.ok("worker", "list"); !strings.Contains(list, "KIND") || !strings.Contains(list, "service") {
		t.Fatalf("worker list does not show the service's kind:\n%s", list)
	}
	select {
	case err := <-svc.done:
		t.Fatalf("worker stop stopped the service (%v); log:\n%s", err, svc.log())
	default:
	}
	// The service still runs jobs.
	c.ok("enqueue", "--id", "after", "--command", "true")
	c.waitState("after", "completed", 20*time.Second)
}

// A reload of a file that no longer declares a queue releases the limits
// the file gave it, unless a queue set changed them since.
func TestE2EReloadReleasesLimitsOfQueuesDropped(t *testing.T) {
	c := newCLI(t)
	cfg := filepath.Join(c.home, "queue.hcl")
	writeFile(t, cfg, "queue \"a\" {\n  max_running = 2\n}\nqueue \"b\" {\n  rate_limit = \"10/m\"\n}\n")
	svc := c.startService("-c", cfg)
	c.ok("queue", "set", "b", "--rate-limit", "20/m") // changed since: kept
	writeFile(t, cfg, "queue \"other\" {}\n")
	svc.signal(syscall.SIGHUP)
	waitFor(t, "the reload", 20*time.Second, func() bool { return strings.Contains(svc.log(), "configuration reloaded") })
	if !regexp.MustCompile(`"queues":\["a"\],[^\n]*"message":"limits of queues no longer declared released"`).MatchString(svc.log()) {
		t.Fatalf("no line naming the queue whose limits went:\n%s", svc.log())
	}
	var qs []struct {
		Name       string  `json:"name"`
		MaxRunning int     `json:"max_running"`
		RateLimit  *string `json:"rate_limit"`
	}
	json.Unmarshal([]byte(c.ok("queue", "list", "--json")), &qs)
	for _, q := range qs {
		switch {
		case q.Name == "a" && q.MaxRunning != 0:
			t.Errorf("a, no longer declared, still runs %d at most", q.MaxRunning)
		case q.Name == "b" && (q.RateLimit == nil || *q.RateLimit != "20/m"):
			t.Errorf("b's rate, set by queue set since, is %v; want 20/m kept", q.RateLimit)
		}
	}
}

// A service started with --var for a variable the file later drops still
// reloads the file, with a warning naming the variable; a start with it
// is refused as before.
func TestE2EReloadAfterTheFileDroppedAVariable(t *testing.T) {
	c := newCLI(t)
	cfg := filepath.Join(c.home, "queue.hcl")
	writeFile(t, cfg, `variable "cmd" { default = "true" }
job "a" {
  schedule = "@daily"
  command  = var.cmd
}
`)
	svc := c.startService("-c", cfg, "--var", "cmd=echo a")
	waitFor(t, "the service to start", 20*time.Second, func() bool { return strings.Contains(svc.log(), "service started") })
	writeFile(t, cfg, `job "b" {
  schedule = "@daily"
  command  = "echo b"
}
`)
	svc.signal(syscall.SIGHUP)
	waitFor(t, "the reload to be logged", 20*time.Second, func() bool {
		return strings.Contains(svc.log(), "configuration reloaded") || strings.Contains(svc.log(), "reload failed")
	})
	if log := svc.log(); strings.Contains(log, "reload failed") || !strings.Contains(log, `"jobs_added":["b"]`) ||
		!strings.Contains(log, "configuration warnings") || !strings.Contains(log, `variable \"cmd\"`) {
		t.Fatalf("a reload of a file without the --var's variable:\n%s", log)
	}
	if list := c.ok("cron", "list"); !strings.Contains(list, "\nb ") || strings.Contains(list, "\na ") {
		t.Fatalf("the reloaded file's jobs are not the ones listed:\n%s", list)
	}
	svc.signal(syscall.SIGTERM)
	if err := svc.wait(30 * time.Second); err != nil {
		t.Fatalf("service exit: %v\n%s", err, svc.log())
	}
	if _, errOut, code := c.run("run", "-c", cfg, "--var", "cmd=echo a"); code != 2 || !strings.Contains(errOut, "Value for undeclared variable") {
		t.Fatalf("a start with a --var the file does not declare: exit %d\n%s", code, errOut)
	}
}

// The file's queue limits replace those a queue set changed at run time,
// at start and at each reload, and the logs say so rather than "nothing
// changed".
func TestE2EReloadSaysItRestoredQueueLimits(t *testing.T) {
	c := newCLI(t)
	cfg := filepath.Join(c.home, "queue.hcl")
	writeFile(t, cfg, `queue "q" {
  max_running = 2
}
`)
	const warning = "stored queue limits replaced by the file's"
	c.ok("queue", "pause", "q") // a stored control, without limits
	svc := c.startService("-c", cfg)
	waitFor(t, "the service to start", 20*time.Second, func() bool { return strings.Contains(svc.log(), "service started") })
	if strings.Contains(svc.log(), warning) {
		t.Fatalf("a first start of a paused queue warned of replaced limits:\n%s", svc.log())
	}
	c.ok("queue", "resume", "q")
	maxRunning := func() string {
		for _, line := range strings.Split(c.ok("queue", "list"), "\n") {
			if f := strings.Fields(line); len(f) > 3 && f[0] == "q" {
				return f[3]
			}
		}
		t.Fatalf("queue q not listed:\n%s", c.ok("queue", "list"))
		return ""
	}
	reload := func() string {
		t.Helper()
		before := strings.Count(svc.log(), "configuration reloaded")
		svc.signal(syscall.SIGHUP)
		var line string
		waitFor(t, "the reload to be logged", 20*time.Second, func() bool {
			lines := strings.Split(svc.log(), "\n")
			n := 0
			for _, l := range lines {
				if strings.Contains(l, "configuration reloaded") {
					if n++; n > before {
						line = l
						return true
					}
				}
			}
			return false
		})
		return line
	}

	c.ok("queue", "set", "q", "--max-running", "5")
	if line := reload(); strings.Contains(line, "nothing changed") || !strings.Contains(line, `"queue_limits_restored":["q"]`) {
		t.Fatalf("a reload that put back the file's limit logged %s", line)
	}
	if got := maxRunning(); got != "2" {
		t.Fatalf("max running after the reload: %s, want the file's 2", got)
	}
	if line := reload(); !strings.Contains(line, "nothing changed") {
		t.Fatalf("a reload that changed nothing logged %s", line)
	}
	// The file's own change of a limit is a changed queue, not a restore.
	writeFile(t, cfg, "queue \"q\" {\n  max_running = 4\n}\n")
	if line := reload(); strings.Contains(line, "queue_limits_restored") || !strings.Contains(line, `"queues_changed":["q"]`) {
		t.Fatalf("a reload whose file changed the limit logged %s", line)
	}
	if got := maxRunning(); got != "4" {
		t.Fatalf("max running after the file changed it: %s, want 4", got)
	}

	svc.signal(syscall.SIGTERM)
	if err := svc.wait(30 * time.Second); err != nil {
		t.Fatalf("service exit: %v\n%s", err, svc.log())
	}
	c.ok("queue", "set", "q", "--rate-limit", "10/s")
	svc = c.startService("-c", cfg)
	waitFor(t, "the warning at start", 20*time.Second, func() bool { return strings.Contains(svc.log(), warning) })
	if !strings.Contains(svc.log(), `"queue_limits_replaced":["q"]`) {
		t.Fatalf("the warning does not name the queue:\n%s", svc.log())
	}
}
