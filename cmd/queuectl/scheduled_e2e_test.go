package main

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
)

// TestE2EScheduledJobs: pending jobs due later show as scheduled, with
// their time, in list, show, status and queue list (text and --json), and
// one runs once it is due.
func TestE2EScheduledJobs(t *testing.T) {
	c := newCLI(t)
	c.ok("enqueue", "--id", "later", "--command", "true", "--run-at", "+2h")
	c.ok("enqueue", "--id", "far", "--command", "true", "--run-at", "+1h")
	c.ok("enqueue", "--id", "now", "--command", "true")
	far := c.job("far")
	if far.State != "pending" || far.RunAt.Sub(far.CreatedAt) < 59*time.Minute {
		t.Fatalf("far: --json keeps the stored state and the time it runs at: %+v", far)
	}

	// list: STATE scheduled, RUN AT its time.
	for _, id := range []string{"later", "far"} {
		j := c.job(id)
		row := logLine(c.ok("list"), id+" ")
		if f := strings.Fields(row); len(f) < 6 || f[2] != "scheduled" || f[5] != j.RunAt.UTC().Format("2006-01-02T15:04:05Z") {
			t.Errorf("list row of %s: %q, want scheduled at %s", id, row, j.RunAt.UTC().Format(time.RFC3339))
		}
		if row := logLine(c.ok("show", id), "state:"); !strings.Contains(row, "scheduled") {
			t.Errorf("show %s: %q, want scheduled", id, row)
		}
	}
	if row := logLine(c.ok("list"), "now "); strings.Fields(row)[2] != "pending" {
		t.Errorf("list row of a job due now: %q", row)
	}
	// list --state scheduled: the two due later, latest enqueued first;
	// --state pending: all three, they are pending.
	listed := func(state string) string {
		var ids []string
		for _, j := range c.list(state) {
			ids = append(ids, j.ID)
		}
		return strings.Join(ids, " ")
	}
	if got := listed("scheduled"); got != "far later" {
		t.Errorf("list --state scheduled: %s, want far later", got)
	}
	if got := listed("pending"); got != "now far later" {
		t.Errorf("list --state pending: %s, want now far later", got)
	}

	// status: pending counts the due job, scheduled the two others.
	var st struct {
		Jobs   map[string]int            `json:"jobs"`
		Queues map[string]map[string]int `json:"queues"`
	}
	if err := json.Unmarshal([]byte(c.ok("status", "--json")), &st); err != nil {
		t.Fatal(err)
	}
	if st.Jobs["pending"] != 1 || st.Jobs["scheduled"] != 2 || st.Queues["default"]["scheduled"] != 2 {
		t.Errorf("status --json: %+v", st)
	}
	if f := strings.Fields(logLine(c.ok("status"), "default")); len(f) < 4 || f[2] != "1" || f[3] != "2" {
		t.Errorf("status row: %q, want 1 pending then 2 scheduled", f)
	}

	// queue list: the same split.
	var qs []struct {
		Name      string         `json:"name"`
		Jobs      map[string]int `json:"jobs"`
		Scheduled int            `json:"scheduled"`
		Backlog   int            `json:"backlog"`
	}
	if err := json.Unmarshal([]byte(c.ok("queue", "list", "--json")), &qs); err != nil {
		t.Fatal(err)
	}
	if len(qs) != 1 || qs[0].Scheduled != 2 || qs[0].Jobs["pending"] != 1 || qs[0].Jobs["scheduled"] != 2 || qs[0].Backlog != 1 {
		t.Errorf("queue list --json: %+v", qs)
	}
	// NAME PAUSED CONCURRENCY MAX RUNNING, RATE LIMIT, PENDING, SCHEDULED, …
	out := c.ok("queue", "list")
	if f := strings.Fields(logLine(out, "default")); len(f) < 7 || f[5] != "1" || f[6] != "2" {
		t.Errorf("queue list: want 1 pending and 2 scheduled:\n%s", out)
	}

	// A job scheduled a moment ahead runs once due, not before.
	c.ok("enqueue", "--id", "soon", "--command", "echo ran", "--run-at", "+2s")
	c.ok("worker", "start")
	soon := c.waitState("soon", "completed", 60*time.Second)
	if soon.StartedAt == nil || soon.StartedAt.Before(soon.RunAt) {
		t.Errorf("soon started at %v, before its run_at %v", soon.StartedAt, soon.RunAt)
	}
	if row := logLine(c.ok("list"), "soon "); strings.Fields(row)[2] != "completed" {
		t.Errorf("list row once it ran: %q", row)
	}
	if got := c.ok("output", "soon"); got != "ran\n" {
		t.Errorf("output %q", got)
	}
	if row := logLine(c.ok("list"), "far "); strings.Fields(row)[2] != "scheduled" {
		t.Errorf("far, not due yet: %q", row)
	}
}
