package main

// End-to-end tests of the job-shaping features: labels, working directory
// and environment, unique keys and dependencies.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestE2ELabelsDirAndEnv enqueues from a subdirectory: the job runs there,
// with the variables of --env-file and --env, and its labels filter lists.
func TestE2ELabelsDirAndEnv(t *testing.T) {
	c := newCLI(t)
	sub := filepath.Join(c.home, "project")
	other := filepath.Join(c.home, "other")
	for _, d := range []string{sub, other} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	envFile := filepath.Join(c.home, "vars.env")
	os.WriteFile(envFile, []byte("# settings\nA=from-file\nB=file-b\n"), 0o600)
	enqueue := c.cmd("enqueue", "--id", "here", "--command", `pwd; echo "$A $B"`, "--env-file", envFile,
		"--env", "B=from-flag", "--label", "team=data", "--label", "tier=gold")
	enqueue.Dir = sub
	if out, errOut, code := runProcess(t, enqueue); code != 0 || out != "here\n" {
		t.Fatalf("enqueue: exit %d %q %s", code, out, errOut)
	}
	c.ok("enqueue", "--id", "there", "--command", "pwd", "--dir", other, "--label", "team=web")
	if _, errOut, code := c.run("enqueue", "--command", "true", "--dir", filepath.Join(c.home, "missing")); code != 2 || !strings.Contains(errOut, "not a directory") {
		t.Fatalf("missing --dir: exit %d %s", code, errOut)
	}
	if _, errOut, code := c.run("enqueue", "--command", "true", "--label", "nokey"); code != 2 || !strings.Contains(errOut, "key=value") {
		t.Fatalf("bad --label: exit %d %s", code, errOut)
	}

	var data []struct {
		ID     string            `json:"id"`
		Labels map[string]string `json:"labels"`
	}
	if err := json.Unmarshal([]byte(c.ok("list", "--json", "--label", "team=data")), &data); err != nil {
		t.Fatal(err)
	}
	if len(data) != 1 || data[0].ID != "here" || data[0].Labels["tier"] != "gold" {
		t.Fatalf("list --label team=data: %+v", data)
	}
	show := c.ok("show", "there")
	if !strings.Contains(show, "dir:") || !strings.Contains(show, other) || !strings.Contains(show, "labels:") || !strings.Contains(show, "team=web") {
		t.Fatalf("show lacks dir or labels:\n%s", show)
	}
	var detail struct {
		Dir    string            `json:"dir"`
		Labels map[string]string `json:"labels"`
	}
	if err := json.Unmarshal([]byte(c.ok("show", "there", "--json")), &detail); err != nil {
		t.Fatal(err)
	}
	if detail.Dir != other || detail.Labels["team"] != "web" {
		t.Fatalf("show --json: dir %q labels %v, want %q and team=web", detail.Dir, detail.Labels, other)
	}

	c.ok("worker", "start")
	c.waitState("here", "completed", 20*time.Second)
	c.waitState("there", "completed", 20*time.Second)
	if out := c.ok("output", "here"); out != sub+"\nfrom-file from-flag\n" {
		t.Fatalf("output of the job enqueued in %s: %q", sub, out)
	}
	if out := c.ok("output", "there"); out != other+"\n" {
		t.Fatalf("output of the --dir job: %q", out)
	}
}

// TestE2EUniqueKeyRace starts several processes that enqueue the same
// unique key at once: exactly one job results and every process prints
// its id.
func TestE2EUniqueKeyRace(t *testing.T) {
	c := newCLI(t)
	c.ok("migrate") // create the database before the race
	const n = 6
	cmds := make([]*exec.Cmd, n)
	outs := make([]*bytes.Buffer, n)
	for i := range cmds {
		cmds[i] = c.cmd("enqueue", "--command", "true", "--unique-key", "nightly-report")
		outs[i] = &bytes.Buffer{}
		cmds[i].Stdout = outs[i]
	}
	for _, cmd := range cmds {
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
	}
	for i, cmd := range cmds {
		if err := cmd.Wait(); err != nil {
			t.Fatalf("enqueue %d: %v", i, err)
		}
	}
	id := strings.TrimSpace(outs[0].String())
	for i, o := range outs {
		if strings.TrimSpace(o.String()) != id {
			t.Fatalf("process %d printed %q, process 0 %q", i, o.String(), id)
		}
	}
	if jobs := c.list(""); len(jobs) != 1 || jobs[0].ID != id {
		t.Fatalf("want exactly job %s, got %+v", id, jobs)
	}
	out, errOut, code := c.run("enqueue", "--command", "true", "--unique-key", "nightly-report")
	if code != 0 || strings.TrimSpace(out) != id || !strings.Contains(errOut, "unique key") {
		t.Fatalf("enqueue while held: exit %d %q %q", code, out, errOut)
	}
}

// TestE2EDependencies chains jobs with --after: they run in order, a
// waiting job lists what it waits for, an unknown id is refused, and a
// dead dependency cancels its dependents, transitively.
func TestE2EDependencies(t *testing.T) {
	c := newCLI(t)
	log := filepath.Join(c.home, "order.log")
	c.ok("enqueue", "--id", "build", "--command", "echo build >> "+log)
	c.ok("enqueue", "--id", "test", "--after", "build", "--command", "echo test >> "+log)
	c.ok("enqueue", "--id", "deploy", "--after", "test", "--after", "build", "--command", "echo deploy >> "+log)
	if _, errOut, code := c.run("enqueue", "--command", "true", "--after", "nope"); code != 2 || !strings.Contains(errOut, `"nope"`) {
		t.Fatalf("unknown --after: exit %d %s", code, errOut)
	}
	if out := c.ok("list"); !strings.Contains(out, "waiting (after build, test)") {
		t.Fatalf("list does not show deploy waiting:\n%s", out)
	}
	if out := c.ok("show", "test"); !strings.Contains(out, "after:") || !strings.Contains(out, "waiting (after build)") {
		t.Fatalf("show test:\n%s", out)
	}
	c.ok("enqueue", "--id", "broken", "--command", "exit 3", "--max-retries", "0")
	c.ok("enqueue", "--id", "report", "--after", "broken", "--command", "true")
	c.ok("enqueue", "--id", "mail", "--after", "report", "--command", "true")
	c.ok("worker", "start")
	c.waitState("deploy", "completed", 30*time.Second)
	if b, _ := os.ReadFile(log); string(b) != "build\ntest\ndeploy\n" {
		t.Fatalf("order: %q", b)
	}
	c.waitState("mail", "cancelled", 30*time.Second)
	for id, reason := range map[string]string{"report": "dependency broken ended dead", "mail": "dependency report was cancelled"} {
		if j := c.job(id); j.State != "cancelled" || j.Error == nil || *j.Error != reason {
			t.Fatalf("%s: %+v", id, j)
		}
	}
}

// TestE2EDependencyFinishesWhileEnqueued enqueues jobs after ones a
// running worker is finishing at that moment: none may be left waiting.
func TestE2EDependencyFinishesWhileEnqueued(t *testing.T) {
	c := newCLI(t)
	c.ok("worker", "start", "--count", "2")
	const n = 15
	for i := range n {
		dep := fmt.Sprintf("dep%d", i)
		c.ok("enqueue", "--id", dep, "--command", "true")
		c.ok("enqueue", "--id", "child"+dep, "--after", dep, "--command", "true")
	}
	c.waitAll("completed", 2*n, 60*time.Second)
}

// TestE2EHooks runs a service whose file declares hooks in the defaults
// block and a queue block: each runs after the outcome it names, with the
// job's variables, and a failing hook changes nothing.
func TestE2EHooks(t *testing.T) {
	c := newCLI(t)
	log := filepath.Join(c.home, "hooks.log")
	cfg := filepath.Join(c.home, "queue.hcl")
	line := `$QUEUECTL_JOB_ID $QUEUECTL_QUEUE $QUEUECTL_STATE $QUEUECTL_ATTEMPT $QUEUECTL_EXIT_CODE >> ` + log
	writeFile(t, cfg, `
defaults {
  on_failure  = "echo failure `+line+`"
  on_success  = "echo default-success >> `+log+`"
  backoff_base = 1
}
queue "hooked" {
  concurrency = 1
  on_success  = "echo success `+line+`"
  on_dead     = "echo dead `+line+`; exit 7"
}
`)
	svc := c.startService("-c", cfg)
	waitFor(t, "the service to start", 20*time.Second, func() bool {
		return strings.Contains(svc.log(), "service started")
	})
	c.ok("enqueue", "--id", "ok", "--queue", "hooked", "--command", "true")
	c.ok("enqueue", "--id", "bad", "--queue", "hooked", "--command", "exit 4", "--max-retries", "1")
	want := []string{
		"success ok hooked completed 1 0",
		"failure bad hooked failed 1 4",
		"failure bad hooked dead 2 4",
		"dead bad hooked dead 2 4",
	}
	var got []string
	waitFor(t, "the hooks to run", 30*time.Second, func() bool {
		b, _ := os.ReadFile(log)
		got = strings.Split(strings.TrimSpace(string(b)), "\n")
		return len(got) >= len(want)
	})
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("hook lines:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	waitFor(t, "the failing hook to be logged", 10*time.Second, func() bool {
		return strings.Contains(svc.log(), `"hook":"on_dead"`)
	})
	if j := c.job("bad"); j.State != "dead" || j.Attempts != 2 {
		t.Fatalf("a failing hook changed the job: %+v", j)
	}
	if out := c.ok("show", "bad"); !strings.Contains(out, "on_dead:") {
		t.Fatalf("show lacks the stored hooks:\n%s", out)
	}
}
