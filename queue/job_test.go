package queue_test

import (
	"encoding/json"
	"errors"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/queuectl/queuectl/queue"
)

func TestParseState(t *testing.T) {
	for _, st := range queue.States() {
		got, err := queue.ParseState(string(st))
		if err != nil || got != st {
			t.Errorf("ParseState(%q) = %q, %v", st, got, err)
		}
	}
	_, err := queue.ParseState("running")
	if !errors.Is(err, queue.ErrInvalid) {
		t.Fatalf("unknown state: want ErrInvalid, got %v", err)
	}
	if want := "valid: waiting, pending, processing, completed, failed, dead, cancelled"; !strings.Contains(err.Error(), want) {
		t.Errorf("error %q should list the states (%s)", err, want)
	}
	if _, err := queue.ParseState("Pending"); err == nil {
		t.Error("state names are case-sensitive")
	}
	// list shows a pending job due later as scheduled: the error says what to ask for.
	if _, err := queue.ParseState("scheduled"); !errors.Is(err, queue.ErrInvalid) || !strings.Contains(err.Error(), "use pending") {
		t.Errorf("scheduled: %v", err)
	}
}

func TestStateFinished(t *testing.T) {
	finished := map[queue.State]bool{queue.StateCompleted: true, queue.StateDead: true, queue.StateCancelled: true}
	for _, st := range queue.States() {
		if st.Finished() != finished[st] {
			t.Errorf("%s.Finished() = %v", st, st.Finished())
		}
	}
}

// jsonKeys marshals v and returns its sorted top-level keys and raw values.
func jsonKeys(t *testing.T, v any) ([]string, map[string]string) {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	keys := make([]string, 0, len(m))
	raw := map[string]string{}
	for k, v := range m {
		keys = append(keys, k)
		raw[k] = string(v)
	}
	sort.Strings(keys)
	return keys, raw
}

func sorted(s ...string) []string {
	s = slices.Clone(s)
	sort.Strings(s)
	return s
}

func TestJobJSON(t *testing.T) {
	jobKeys := sorted("id", "queue", "command", "state", "priority", "attempts", "max_retries", "timeout",
		"run_at", "created_at", "updated_at", "started_at", "finished_at", "exit_code", "error", "worker", "scheduled_at")

	t.Run("fresh job", func(t *testing.T) {
		j, err := queue.NewJob{ID: "a", Command: "echo hi"}.Resolve(queue.DefaultSettings(), t0)
		if err != nil {
			t.Fatal(err)
		}
		keys, raw := jsonKeys(t, j)
		if !slices.Equal(keys, jobKeys) {
			t.Fatalf("keys %v, want %v", keys, jobKeys)
		}
		want := map[string]string{
			"id": `"a"`, "queue": `"default"`, "command": `"echo hi"`, "state": `"pending"`, "priority": "0",
			"attempts": "0", "max_retries": "3", "timeout": "null", "run_at": `"2026-03-01T12:00:00Z"`,
			"created_at": `"2026-03-01T12:00:00Z"`, "started_at": "null", "finished_at": "null",
			"exit_code": "null", "error": "null", "worker": "null", "scheduled_at": "null",
		}
		for k, v := range want {
			if raw[k] != v {
				t.Errorf("%s = %s, want %s", k, raw[k], v)
			}
		}
	})

	t.Run("finished cron job", func(t *testing.T) {
		local := time.FixedZone("UTC+2", 2*60*60)
		code := 3
		j := &queue.Job{
			ID: "b", Queue: "q", Command: "false", State: queue.StateFailed, Attempts: 1, MaxRetries: 2,
			Timeout: 1500 * time.Millisecond, RunAt: t0.In(local), CreatedAt: t0, UpdatedAt: t0,
			StartedAt: t0, FinishedAt: t0.Add(time.Second), ExitCode: &code, Error: "exit status 3",
			Worker: "w1", Template: "nightly", ScheduledAt: t0,
		}
		keys, raw := jsonKeys(t, j)
		if want := sorted(append(slices.Clone(jobKeys), "template")...); !slices.Equal(keys, want) {
			t.Fatalf("keys %v, want %v", keys, want)
		}
		want := map[string]string{
			"timeout": "1.5", "run_at": `"2026-03-01T12:00:00Z"`, "started_at": `"2026-03-01T12:00:00Z"`,
			"finished_at": `"2026-03-01T12:00:01Z"`, "exit_code": "3", "error": `"exit status 3"`,
			"worker": `"w1"`, "template": `"nightly"`, "scheduled_at": `"2026-03-01T12:00:00Z"`,
		}
		for k, v := range want {
			if raw[k] != v {
				t.Errorf("%s = %s, want %s", k, raw[k], v)
			}
		}
	})
}

func TestAttemptJSON(t *testing.T) {
	attemptKeys := sorted("attempt", "started_at", "finished_at", "duration_ms", "exit_code", "signal", "outcome", "worker", "error", "output_dropped_bytes")
	local := time.FixedZone("UTC-5", -5*60*60)
	a := &queue.Attempt{
		JobID: "a", Number: 2, StartedAt: t0.In(local), FinishedAt: t0.Add(1500 * time.Millisecond),
		Signal: "SIGKILL", Outcome: queue.OutcomeTimedOut, Worker: "w1", Error: "timed out after 1s",
		Output: []byte("secret output"), Dropped: 9,
	}
	keys, raw := jsonKeys(t, a)
	if !slices.Equal(keys, attemptKeys) {
		t.Fatalf("keys %v, want %v", keys, attemptKeys)
	}
	want := map[string]string{
		"attempt": "2", "started_at": `"2026-03-01T12:00:00Z"`, "finished_at": `"2026-03-01T12:00:01.5Z"`,
		"duration_ms": "1500", "exit_code": "null", "signal": `"SIGKILL"`, "outcome": `"timed_out"`,
		"worker": `"w1"`, "error": `"timed out after 1s"`, "output_dropped_bytes": "9",
	}
	for k, v := range want {
		if raw[k] != v {
			t.Errorf("%s = %s, want %s", k, raw[k], v)
		}
	}

	code := 0
	ok := &queue.Attempt{Number: 1, StartedAt: t0, FinishedAt: t0, ExitCode: &code, Outcome: queue.OutcomeSucceeded}
	_, raw = jsonKeys(t, ok)
	if raw["signal"] != "null" || raw["error"] != "null" || raw["exit_code"] != "0" {
		t.Errorf("absent signal/error must be null, exit code 0 kept: %v", raw)
	}
}

func TestWorkerJSON(t *testing.T) {
	w := &queue.WorkerInfo{ID: "w1", PID: 42, Host: "h", BootID: "private", Queues: []string{"a"}, StartedAt: t0, HeartbeatAt: t0}
	keys, raw := jsonKeys(t, w)
	if want := sorted("id", "pid", "host", "kind", "queues", "started_at", "heartbeat_at", "current_jobs"); !slices.Equal(keys, want) {
		t.Fatalf("keys %v, want %v", keys, want)
	}
	if raw["current_jobs"] != "[]" || raw["kind"] != `"worker"` {
		t.Errorf("current_jobs = %s, kind = %s; want [] and \"worker\"", raw["current_jobs"], raw["kind"])
	}
	if _, raw = jsonKeys(t, &queue.WorkerInfo{ID: "s", Service: true}); raw["kind"] != `"service"` {
		t.Errorf("a service's kind = %s", raw["kind"])
	}
	// A worker of every queue lists none, as an empty list, not null.
	_, raw = jsonKeys(t, &queue.WorkerInfo{ID: "w2", StartedAt: t0, HeartbeatAt: t0})
	if raw["queues"] != "[]" {
		t.Errorf("queues of a worker of every queue = %s, want []", raw["queues"])
	}
}
