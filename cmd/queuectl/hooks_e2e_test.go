package main

import (
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestE2EHookTimeout: a hook that outlives the hook_timeout of its queue
// (which wins over the defaults block's) is stopped with its whole process
// group, the log says it timed out, and the job keeps its outcome.
func TestE2EHookTimeout(t *testing.T) {
	c := newCLI(t)
	pidFile := filepath.Join(c.home, "hook-pgid")
	cfg := filepath.Join(c.home, "queue.hcl")
	writeFile(t, cfg, `
defaults {
  hook_timeout = "10m"
}
queue "hooked" {
  concurrency  = 1
  hook_timeout = "1s"
  on_success   = "echo $$ > `+pidFile+`; sleep 300 & sleep 300; wait"
}
`)
	svc := c.startService("-c", cfg, "--kill-grace", "500ms")
	waitFor(t, "the service to start", 20*time.Second, func() bool {
		return strings.Contains(svc.log(), "service started")
	})
	c.ok("enqueue", "--id", "ok", "--queue", "hooked", "--command", "true")
	waitFor(t, "the hook to time out", 30*time.Second, func() bool {
		return strings.Contains(svc.log(), `"timed_out":true`)
	})
	for _, want := range []string{`"hook":"on_success"`, `"job_id":"ok"`, `"message":"hook ran"`} {
		if line := logLine(svc.log(), `"timed_out":true`); !strings.Contains(line, want) {
			t.Errorf("the timed-out hook's log line lacks %s: %s", want, line)
		}
	}
	checkGroupGone(t, pidFile, "the timed-out hook")
	if j := c.job("ok"); j.State != "completed" || j.Attempts != 1 {
		t.Fatalf("a timed-out hook changed the job: %+v", j)
	}
	if out := c.ok("show", "ok"); !strings.HasSuffix(strings.TrimSpace(logLine(out, "hook_timeout:")), " 1s") {
		t.Fatalf("show lacks the hook timeout:\n%s", out)
	}
}

// logLine is the first line of log holding s.
func logLine(log, s string) string {
	for _, l := range strings.Split(log, "\n") {
		if strings.Contains(l, s) {
			return l
		}
	}
	return ""
}
