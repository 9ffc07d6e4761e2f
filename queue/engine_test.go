package queue_test

import (
	"errors"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/queuectl/queuectl/internal/proc"
	"github.com/queuectl/queuectl/queue"
)

// Tests of the engine's decisions, driven by a fake clock through
// ProcessAvailable and RescueOnce on a real SQLite store.

func TestEngineBackoffSchedule(t *testing.T) {
	tests := []struct {
		name       string
		base       float64
		maxBackoff *time.Duration
		want       []time.Duration // delay after attempt 1, 2, ...
	}{
		{"base 2", 2, nil, []time.Duration{2 * time.Second, 4 * time.Second, 8 * time.Second}},
		{"base 3", 3, nil, []time.Duration{3 * time.Second, 9 * time.Second, 27 * time.Second}},
		{"base 2 capped at 5s", 2, ptr(5 * time.Second), []time.Duration{2 * time.Second, 4 * time.Second, 5 * time.Second, 5 * time.Second}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newFakeEngine(t, exited(1))
			j := enqueue(t, f.store, queue.NewJob{
				ID: "flaky", BackoffBase: ptr(tc.base), MaxBackoff: tc.maxBackoff, MaxRetries: ptr(len(tc.want)),
			}, t0)
			for i, delay := range tc.want {
				f.process(t, 1)
				finishedAt := f.clock.Now() // the runner advanced the clock; the engine records at this time
				got := getJob(t, f.store, j.ID)
				if got.State != queue.StateFailed || got.Attempts != i+1 {
					t.Fatalf("after attempt %d: state %s attempts %d, want failed %d", i+1, got.State, got.Attempts, i+1)
				}
				if want := finishedAt.Add(delay); !got.RunAt.Equal(want) {
					t.Fatalf("after attempt %d: run_at = finish + %s, want finish + %s", i+1, got.RunAt.Sub(finishedAt), delay)
				}
				f.clock.Set(got.RunAt.Add(-time.Microsecond))
				f.process(t, 0) // 1µs early: not runnable yet
				f.clock.Set(got.RunAt)
			}
			f.process(t, 1)
			got := getJob(t, f.store, j.ID)
			if got.State != queue.StateDead || got.Attempts != len(tc.want)+1 {
				t.Fatalf("after the last attempt: state %s attempts %d, want dead %d", got.State, got.Attempts, len(tc.want)+1)
			}
		})
	}
}

func TestEngineMaxRetries(t *testing.T) {
	timedOut := queue.RunResult{ExitCode: -1, Signal: "SIGKILL", TimedOut: true}
	tests := []struct {
		name       string
		maxRetries int
		results    []queue.RunResult
		states     []queue.State // after each attempt
		outcomes   []queue.Outcome
		lastError  string
		lastExit   *int
	}{
		{
			name: "0 retries: dead after 1 attempt", maxRetries: 0,
			results:  []queue.RunResult{exited(3)},
			states:   []queue.State{queue.StateDead},
			outcomes: []queue.Outcome{queue.OutcomeFailed}, lastError: "exit status 3", lastExit: ptr(3),
		},
		{
			name: "1 retry: failed then dead after 2 attempts", maxRetries: 1,
			results:  []queue.RunResult{exited(3), exited(5)},
			states:   []queue.State{queue.StateFailed, queue.StateDead},
			outcomes: []queue.Outcome{queue.OutcomeFailed, queue.OutcomeFailed}, lastError: "exit status 5", lastExit: ptr(5),
		},
		{
			name: "1 retry: a timeout is charged like a failure", maxRetries: 1,
			results:  []queue.RunResult{exited(3), timedOut},
			states:   []queue.State{queue.StateFailed, queue.StateDead},
			outcomes: []queue.Outcome{queue.OutcomeFailed, queue.OutcomeTimedOut}, lastError: "timed out after 1m0s",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newFakeEngine(t, tc.results...)
			j := enqueue(t, f.store, queue.NewJob{ID: "j", MaxRetries: ptr(tc.maxRetries), Timeout: ptr(time.Minute)}, t0)
			for i, want := range tc.states {
				f.process(t, 1)
				got := getJob(t, f.store, j.ID)
				if got.State != want || got.Attempts != i+1 {
					t.Fatalf("after attempt %d: state %s attempts %d, want %s %d", i+1, got.State, got.Attempts, want, i+1)
				}
				f.clock.Set(got.RunAt)
			}
			dead := getJob(t, f.store, j.ID)
			if dead.Error != tc.lastError {
				t.Errorf("dead job error = %q, want the last attempt's %q", dead.Error, tc.lastError)
			}
			if !equalIntPtr(dead.ExitCode, tc.lastExit) {
				t.Errorf("dead job exit code = %v, want %v", fmtIntPtr(dead.ExitCode), fmtIntPtr(tc.lastExit))
			}
			h := history(t, f.store, j.ID)
			if !slices.Equal(outcomes(h), tc.outcomes) {
				t.Fatalf("history outcomes = %v, want %v", outcomes(h), tc.outcomes)
			}
			for i, a := range h {
				if a.Number != i+1 || a.Worker != "test-worker" {
					t.Errorf("history row %d: number %d worker %q", i, a.Number, a.Worker)
				}
			}
			// A dead job is never claimed again, however long we wait.
			f.clock.Advance(365 * 24 * time.Hour)
			f.process(t, 0)
		})
	}
}

func TestEngineRetryFromDeadLetterQueue(t *testing.T) {
	f := newFakeEngine(t, exited(2), exited(0))
	j := enqueue(t, f.store, queue.NewJob{ID: "dlq", MaxRetries: ptr(0)}, t0)
	f.process(t, 1)
	if got := getJob(t, f.store, j.ID); got.State != queue.StateDead {
		t.Fatalf("state %s, want dead", got.State)
	}

	retryAt := f.clock.Advance(time.Hour)
	moved, err := f.store.RetryJobs(testCtx(t), queue.RetryParams{IDs: []string{j.ID}, Now: retryAt})
	if err != nil || !slices.Equal(moved, []string{j.ID}) {
		t.Fatalf("retry: moved %v err %v", moved, err)
	}
	got := getJob(t, f.store, j.ID)
	if got.State != queue.StatePending || got.Attempts != 0 || !got.RunAt.Equal(retryAt) {
		t.Fatalf("retried job: state %s attempts %d run_at %v; want pending 0 %v", got.State, got.Attempts, got.RunAt, retryAt)
	}

	f.process(t, 1)
	got = getJob(t, f.store, j.ID)
	if got.State != queue.StateCompleted || got.Attempts != 1 || got.Error != "" || !equalIntPtr(got.ExitCode, ptr(0)) {
		t.Fatalf("after the retry: state %s attempts %d error %q exit %s; want completed 1 \"\" 0",
			got.State, got.Attempts, got.Error, fmtIntPtr(got.ExitCode))
	}
	specs := f.runner.calls()
	if !slices.Contains(specs[1].Env, "QUEUECTL_ATTEMPT=1") {
		t.Errorf("the retried run must count attempts from 1 again, env %v", specs[1].Env)
	}
	// The history keeps every row in order; numbers start again from 1.
	h := history(t, f.store, j.ID)
	if want := []queue.Outcome{queue.OutcomeFailed, queue.OutcomeSucceeded}; !slices.Equal(outcomes(h), want) {
		t.Fatalf("history = %v, want %v", outcomes(h), want)
	}
	if h[0].Number != 1 || h[1].Number != 1 {
		t.Errorf("attempt numbers %d, %d; want 1, 1", h[0].Number, h[1].Number)
	}
}

func TestEngineOutcomeClassification(t *testing.T) {
	tests := []struct {
		name    string
		res     queue.RunResult
		state   queue.State
		outcome queue.Outcome
		err     string
		exit    *int
		signal  string
	}{
		{"exit 0", queue.RunResult{ExitCode: 0, Output: []byte("hello\n")}, queue.StateCompleted, queue.OutcomeSucceeded, "", ptr(0), ""},
		{"exit 3", exited(3), queue.StateFailed, queue.OutcomeFailed, "exit status 3", ptr(3), ""},
		{"exit 126", exited(126), queue.StateFailed, queue.OutcomeFailed, "exit status 126: command not executable", ptr(126), ""},
		{"exit 127", exited(127), queue.StateFailed, queue.OutcomeFailed, "exit status 127: command not found", ptr(127), ""},
		{"killed by a signal", queue.RunResult{ExitCode: -1, Signal: "SIGKILL"}, queue.StateFailed, queue.OutcomeFailed, "killed by SIGKILL", nil, "SIGKILL"},
		{"timed out", queue.RunResult{ExitCode: -1, Signal: "SIGKILL", TimedOut: true}, queue.StateFailed, queue.OutcomeTimedOut, "timed out after 1m30s", nil, "SIGKILL"},
		{"could not start", queue.RunResult{ExitCode: -1, StartErr: errors.New("chdir /nowhere: no such file or directory")},
			queue.StateFailed, queue.OutcomeFailed, "could not start: chdir /nowhere: no such file or directory", nil, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newFakeEngine(t, tc.res)
			j := enqueue(t, f.store, queue.NewJob{ID: "j", Timeout: ptr(90 * time.Second)}, t0)
			f.process(t, 1)
			got := getJob(t, f.store, j.ID)
			if got.State != tc.state || got.Error != tc.err || !equalIntPtr(got.ExitCode, tc.exit) {
				t.Errorf("job: state %s error %q exit %s; want %s %q %s",
					got.State, got.Error, fmtIntPtr(got.ExitCode), tc.state, tc.err, fmtIntPtr(tc.exit))
			}
			h := history(t, f.store, j.ID)
			if len(h) != 1 {
				t.Fatalf("history has %d rows, want 1", len(h))
			}
			a := h[0]
			if a.Outcome != tc.outcome || a.Error != tc.err || a.Signal != tc.signal || !equalIntPtr(a.ExitCode, tc.exit) {
				t.Errorf("attempt: outcome %s error %q signal %q exit %s; want %s %q %q %s",
					a.Outcome, a.Error, a.Signal, fmtIntPtr(a.ExitCode), tc.outcome, tc.err, tc.signal, fmtIntPtr(tc.exit))
			}
			if a.Duration() != 1500*time.Millisecond {
				t.Errorf("attempt duration %s, want the runner's 1.5s", a.Duration())
			}
			out, err := f.store.Output(testCtx(t), j.ID, 0)
			if err != nil || string(out.Output) != string(tc.res.Output) {
				t.Errorf("output %q err %v, want %q", out.Output, err, tc.res.Output)
			}
		})
	}
}

func TestEngineRunSpec(t *testing.T) {
	f := newFakeEngine(t, exited(1), exited(0))
	j := enqueue(t, f.store, queue.NewJob{
		ID: "env-job", Queue: "reports", Command: "echo $GREETING", Dir: "/srv/reports", Timeout: ptr(45 * time.Second),
		Env: map[string]string{"GREETING": "hello", "A_FIRST": "1"},
	}, t0)

	f.process(t, 1)
	f.clock.Set(getJob(t, f.store, j.ID).RunAt)
	f.process(t, 1)

	specs := f.runner.calls()
	if len(specs) != 2 {
		t.Fatalf("runner called %d times, want 2", len(specs))
	}
	for i, spec := range specs {
		want := []string{
			"QUEUECTL_JOB_ID=env-job",
			"QUEUECTL_ATTEMPT=" + strconv.Itoa(i+1),
			"QUEUECTL_QUEUE=reports",
			"QUEUECTL_WORKER=test-worker",
			"A_FIRST=1",
			"GREETING=hello",
		}
		if !slices.Equal(spec.Env, want) {
			t.Errorf("attempt %d env = %q, want %q", i+1, spec.Env, want)
		}
		if spec.Command != "echo $GREETING" || spec.Dir != "/srv/reports" || spec.Timeout != 45*time.Second {
			t.Errorf("attempt %d spec: command %q dir %q timeout %s", i+1, spec.Command, spec.Dir, spec.Timeout)
		}
	}
}

func TestEngineRunSpecCronEnv(t *testing.T) {
	f := newFakeEngine(t)
	slot := time.Date(2026, 3, 1, 11, 0, 0, 0, time.UTC)
	enqueue(t, f.store, queue.NewJob{ID: "nightly-1", Template: "nightly", ScheduledAt: slot, Env: map[string]string{"X": "y"}}, t0)
	f.process(t, 1)
	want := []string{
		"QUEUECTL_JOB_ID=nightly-1", "QUEUECTL_ATTEMPT=1", "QUEUECTL_QUEUE=default", "QUEUECTL_WORKER=test-worker",
		"QUEUECTL_TEMPLATE=nightly", "QUEUECTL_SCHEDULED_AT=2026-03-01T11:00:00Z", "X=y",
	}
	if got := f.runner.calls()[0].Env; !slices.Equal(got, want) {
		t.Errorf("env = %q, want %q", got, want)
	}
}

// exitedPID returns the pid of a child process that has exited and been
// reaped, with the start-time token it had.
func exitedPID(t *testing.T) (int, uint64) {
	t.Helper()
	cmd := exec.Command("true")
	if err := cmd.Start(); err != nil {
		t.Fatalf("start true: %v", err)
	}
	pid := cmd.Process.Pid
	start, err := proc.StartTime(pid) // still readable: not reaped until Wait
	if err != nil {
		t.Fatalf("start time of %d: %v", pid, err)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("wait true: %v", err)
	}
	return pid, start
}

func TestEngineRescue(t *testing.T) {
	host, err := os.Hostname()
	if err != nil {
		t.Fatal(err)
	}
	bootID := proc.BootID()
	if bootID == "" {
		t.Skip("no boot id on this system; local liveness checks are off")
	}
	self := os.Getpid()
	selfStart, err := proc.StartTime(self)
	if err != nil {
		t.Fatal(err)
	}

	// claimBy registers worker w and lets it claim a fresh job at t0
	// (lease until t0+30s).
	claimBy := func(t *testing.T, f *fakeEngine, w *queue.WorkerInfo, maxRetries int) *queue.Job {
		t.Helper()
		w.StartedAt, w.HeartbeatAt = t0, t0
		if err := f.store.RegisterWorker(testCtx(t), w); err != nil {
			t.Fatal(err)
		}
		enqueue(t, f.store, queue.NewJob{ID: "held", MaxRetries: ptr(maxRetries)}, t0)
		jobs, err := f.store.ClaimJobs(testCtx(t), queue.ClaimParams{Worker: w.ID, Limit: 1, Now: t0, LeaseUntil: t0.Add(30 * time.Second)})
		if err != nil || len(jobs) != 1 {
			t.Fatalf("claim by %s: %d jobs, err %v", w.ID, len(jobs), err)
		}
		return jobs[0]
	}
	rescue := func(t *testing.T, f *fakeEngine, want int) {
		t.Helper()
		n, err := f.eng.RescueOnce(testCtx(t))
		if err != nil || n != want {
			t.Fatalf("at t0+%s: RescueOnce rescued %d (err %v), want %d", f.clock.Now().Sub(t0), n, err, want)
		}
	}
	workerIDs := func(t *testing.T, f *fakeEngine) []string {
		t.Helper()
		ws, err := f.store.ListWorkers(testCtx(t))
		if err != nil {
			t.Fatal(err)
		}
		var ids []string
		for _, w := range ws {
			ids = append(ids, w.ID)
		}
		return ids
	}

	t.Run("dead local worker is rescued before its lease expires", func(t *testing.T) {
		f := newFakeEngine(t)
		pid, start := exitedPID(t)
		w := &queue.WorkerInfo{ID: "gone", PID: pid, Host: host, BootID: bootID, ProcStart: start}
		j := claimBy(t, f, w, 3)
		f.clock.Set(t0.Add(time.Second)) // lease valid until t0+30s
		rescue(t, f, 1)
		got := getJob(t, f.store, j.ID)
		if got.State != queue.StateFailed || got.Attempts != 1 || !got.RunAt.Equal(f.clock.Now().Add(2*time.Second)) {
			t.Fatalf("rescued job: state %s attempts %d run_at %v; want failed 1, retry after 2s", got.State, got.Attempts, got.RunAt)
		}
		if !strings.Contains(got.Error, "worker lost") || !strings.Contains(got.Error, "gone") {
			t.Errorf("error %q should say the worker's process is gone", got.Error)
		}
		h := history(t, f.store, j.ID)
		if len(h) != 1 || h[0].Outcome != queue.OutcomeLost || h[0].Worker != "gone" {
			t.Fatalf("history %v, want one lost attempt of worker gone", outcomes(h))
		}
		if ids := workerIDs(t, f); slices.Contains(ids, "gone") {
			t.Errorf("dead worker still registered: %v", ids)
		}
	})

	t.Run("lost attempt with no retries left goes dead", func(t *testing.T) {
		f := newFakeEngine(t)
		pid, start := exitedPID(t)
		j := claimBy(t, f, &queue.WorkerInfo{ID: "gone", PID: pid, Host: host, BootID: bootID, ProcStart: start}, 0)
		rescue(t, f, 1)
		got := getJob(t, f.store, j.ID)
		if got.State != queue.StateDead || !strings.Contains(got.Error, "worker lost") {
			t.Fatalf("state %s error %q, want dead with a worker-lost error", got.State, got.Error)
		}
		if h := history(t, f.store, j.ID); len(h) != 1 || h[0].Outcome != queue.OutcomeLost {
			t.Fatalf("history %v, want [lost]", outcomes(h))
		}
	})

	t.Run("worker on another host is rescued only after lease expiry", func(t *testing.T) {
		f := newFakeEngine(t)
		j := claimBy(t, f, &queue.WorkerInfo{ID: "remote", PID: self, Host: host + "-elsewhere", BootID: "other-boot"}, 3)
		f.clock.Set(t0.Add(29 * time.Second))
		rescue(t, f, 0)
		if got := getJob(t, f.store, j.ID); got.State != queue.StateProcessing {
			t.Fatalf("state %s before lease expiry, want processing", got.State)
		}
		f.clock.Set(t0.Add(31 * time.Second))
		rescue(t, f, 1)
		got := getJob(t, f.store, j.ID)
		if got.State != queue.StateFailed || got.Error != "worker lost: lease expired" {
			t.Fatalf("state %s error %q, want failed, worker lost: lease expired", got.State, got.Error)
		}
		if h := history(t, f.store, j.ID); len(h) != 1 || h[0].Outcome != queue.OutcomeLost {
			t.Fatalf("history %v, want [lost]", outcomes(h))
		}
		// Its heartbeat is 31s old, less than two leases: still registered.
		if ids := workerIDs(t, f); !slices.Contains(ids, "remote") {
			t.Errorf("remote worker unregistered too early: %v", ids)
		}
	})

	t.Run("live local worker is not rescued", func(t *testing.T) {
		f := newFakeEngine(t)
		j := claimBy(t, f, &queue.WorkerInfo{ID: "alive", PID: self, Host: host, BootID: bootID, ProcStart: selfStart}, 3)
		f.clock.Set(t0.Add(time.Second))
		rescue(t, f, 0)
		if got := getJob(t, f.store, j.ID); got.State != queue.StateProcessing || got.Worker != "alive" {
			t.Fatalf("state %s worker %q, want processing by alive", got.State, got.Worker)
		}
		if ids := workerIDs(t, f); !slices.Contains(ids, "alive") {
			t.Errorf("live worker unregistered: %v", ids)
		}
	})

	t.Run("same host name with another boot id waits for the lease", func(t *testing.T) {
		// A cloned VM or a container sharing this host's name: its pid
		// means nothing here, so only its lease decides, even when that
		// pid is not running on this host.
		f := newFakeEngine(t)
		pid, start := exitedPID(t)
		j := claimBy(t, f, &queue.WorkerInfo{ID: "twin", PID: pid, Host: host, BootID: bootID + "-other", ProcStart: start}, 3)
		f.clock.Set(t0.Add(29 * time.Second))
		rescue(t, f, 0)
		if got := getJob(t, f.store, j.ID); got.State != queue.StateProcessing || got.Worker != "twin" {
			t.Fatalf("state %s worker %q before its lease ended, want processing by twin", got.State, got.Worker)
		}
		if ids := workerIDs(t, f); !slices.Contains(ids, "twin") {
			t.Errorf("worker with another boot id unregistered while its heartbeat is fresh: %v", ids)
		}
		f.clock.Set(t0.Add(31 * time.Second))
		rescue(t, f, 1)
		if got := getJob(t, f.store, j.ID); got.State != queue.StateFailed || got.Error != "worker lost: lease expired" {
			t.Fatalf("state %s error %q, want failed after lease expiry", got.State, got.Error)
		}
	})

	t.Run("own job that this engine is not running is rescued after lease expiry", func(t *testing.T) {
		// A claim whose reply was lost: the store says this worker holds the
		// job, but the engine never started it, so nothing renews the lease.
		f := newFakeEngine(t)
		j := claimBy(t, f, &queue.WorkerInfo{ID: "test-worker", PID: self, Host: host, BootID: bootID, ProcStart: selfStart}, 3)
		f.clock.Set(t0.Add(29 * time.Second))
		rescue(t, f, 0)
		f.clock.Set(t0.Add(31 * time.Second))
		rescue(t, f, 1)
		if got := getJob(t, f.store, j.ID); got.State != queue.StateFailed || got.Error != "worker lost: lease expired" {
			t.Fatalf("state %s error %q, want failed after lease expiry", got.State, got.Error)
		}
	})

	t.Run("reused pid with another start time counts as dead", func(t *testing.T) {
		f := newFakeEngine(t)
		j := claimBy(t, f, &queue.WorkerInfo{ID: "reused", PID: self, Host: host, BootID: bootID, ProcStart: selfStart + 1}, 3)
		f.clock.Set(t0.Add(time.Second))
		rescue(t, f, 1)
		if got := getJob(t, f.store, j.ID); got.State != queue.StateFailed {
			t.Fatalf("state %s, want failed", got.State)
		}
	})
}

func equalIntPtr(a, b *int) bool {
	if a == nil || b == nil {
		return a == b
	}
	return *a == *b
}

func fmtIntPtr(p *int) string {
	if p == nil {
		return "<nil>"
	}
	return strconv.Itoa(*p)
}
