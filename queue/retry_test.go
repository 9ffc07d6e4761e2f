package queue_test

import (
	"math"
	"testing"
	"time"

	"github.com/queuectl/queuectl/queue"
)

func TestBackoff(t *testing.T) {
	const forever = time.Duration(math.MaxInt64)
	tests := []struct {
		name string
		base float64
		n    int
		max  time.Duration
		want time.Duration
	}{
		{"2^1", 2, 1, 0, 2 * time.Second},
		{"2^2", 2, 2, 0, 4 * time.Second},
		{"2^3", 2, 3, 0, 8 * time.Second},
		{"3^3", 3, 3, 0, 27 * time.Second},
		{"fractional base 1.5^2", 1.5, 2, 0, 2250 * time.Millisecond},
		{"base 1 is a constant second", 1, 50, 0, time.Second},
		{"n below 1 counts as 1", 2, 0, 0, 2 * time.Second},
		{"below the cap", 2, 10, time.Hour, 1024 * time.Second},
		{"at the cap", 2, 3, 8 * time.Second, 8 * time.Second},
		{"above the cap", 2, 3, 5 * time.Second, 5 * time.Second},
		{"cap reached stays capped", 2, 12, time.Hour, time.Hour},
		{"huge n returns the cap", 2, 1_000_000, time.Hour, time.Hour},
		{"huge n, huge base returns the cap", 100, math.MaxInt32, 30 * 24 * time.Hour, 30 * 24 * time.Hour},
		{"huge n without a cap saturates", 2, 1_000_000, 0, forever},
		{"the largest number of seconds does not wrap", float64(math.MaxInt64) / float64(time.Second), 1, 0, forever},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := queue.Backoff(tc.base, tc.n, tc.max); got != tc.want {
				t.Errorf("Backoff(%g, %d, %s) = %s, want %s", tc.base, tc.n, tc.max, got, tc.want)
			}
		})
	}
}

// TestBackoffNeverNegative sweeps bases (including ones whose powers land on
// the largest representable number of seconds) and attempt numbers: the delay
// must never be negative and never shrink as attempts grow.
func TestBackoffNeverNegative(t *testing.T) {
	bases := []float64{1, 1.5, 2, 3, 9.919481520309358, 45.79467217919569, 98.39611363175885, 100}
	for _, base := range bases {
		prev := time.Duration(0)
		for n := 1; n <= 100; n++ {
			got := queue.Backoff(base, n, 0)
			if got < prev {
				t.Fatalf("Backoff(%v, %d, 0) = %d, less than %d for n-1", base, n, int64(got), int64(prev))
			}
			prev = got
		}
	}
}

func TestRetryPolicyDecide(t *testing.T) {
	now := t0.Add(time.Hour)
	started := now.Add(-3 * time.Second)
	code := func(c int) *int { return &c }
	tests := []struct {
		name       string
		attempts   int // of the job, counting the attempt that just ended
		maxRetries int
		end        queue.End
		state      queue.State
		newAttempt int           // Finish.Attempts
		runAt      time.Duration // Finish.RunAt - now; -1 means "unchanged (the job's run_at)"
	}{
		{"success completes", 1, 3, queue.End{Outcome: queue.OutcomeSucceeded, ExitCode: code(0)}, queue.StateCompleted, 1, -1},
		{"user cancel cancels", 1, 3, queue.End{Outcome: queue.OutcomeCancelled, Error: "cancelled by user"}, queue.StateCancelled, 1, -1},
		{"cancel with no retries left still cancels", 4, 3, queue.End{Outcome: queue.OutcomeCancelled}, queue.StateCancelled, 4, -1},
		{"interrupt goes back to pending uncharged", 2, 3, queue.End{Outcome: queue.OutcomeInterrupted}, queue.StatePending, 2, 0},
		{"interrupt on the last attempt is not dead", 4, 3, queue.End{Outcome: queue.OutcomeInterrupted}, queue.StatePending, 4, 0},
		{"failure with retries left", 1, 3, queue.End{Outcome: queue.OutcomeFailed, ExitCode: code(1)}, queue.StateFailed, 1, 2 * time.Second},
		{"third failure of four", 3, 3, queue.End{Outcome: queue.OutcomeFailed, ExitCode: code(1)}, queue.StateFailed, 3, 8 * time.Second},
		{"failure with no retries left", 4, 3, queue.End{Outcome: queue.OutcomeFailed, ExitCode: code(1)}, queue.StateDead, 4, -1},
		{"zero retries: first failure is dead", 1, 0, queue.End{Outcome: queue.OutcomeFailed}, queue.StateDead, 1, -1},
		{"timeout with retries left", 2, 3, queue.End{Outcome: queue.OutcomeTimedOut}, queue.StateFailed, 2, 4 * time.Second},
		{"lost with retries left", 1, 1, queue.End{Outcome: queue.OutcomeLost}, queue.StateFailed, 1, 2 * time.Second},
		{"lost with no retries left", 2, 1, queue.End{Outcome: queue.OutcomeLost}, queue.StateDead, 2, -1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			j := &queue.Job{ID: "j", Attempts: tc.attempts, MaxRetries: tc.maxRetries, BackoffBase: 2, MaxBackoff: time.Hour, RunAt: t0}
			e := tc.end
			e.Started, e.Finished, e.Output, e.Dropped, e.Signal = started, now, []byte("out"), 7, "SIGTERM"
			f := queue.RetryPolicy{}.Decide(j, "w1", e, now)
			if f.State != tc.state || f.Attempts != tc.newAttempt {
				t.Errorf("state %s attempts %d, want %s %d", f.State, f.Attempts, tc.state, tc.newAttempt)
			}
			wantUncharged := 0 // an interrupt is not charged: the count grows, the number stays taken
			if tc.end.Outcome == queue.OutcomeInterrupted {
				wantUncharged = 1
			}
			if f.Uncharged != wantUncharged {
				t.Errorf("uncharged %d, want %d", f.Uncharged, wantUncharged)
			}
			wantRunAt := now.Add(tc.runAt)
			if tc.runAt < 0 {
				wantRunAt = t0
			}
			if !f.RunAt.Equal(wantRunAt) {
				t.Errorf("run_at %v, want %v", f.RunAt, wantRunAt)
			}
			// The claim being finished and its history row.
			if f.JobID != "j" || f.Worker != "w1" || f.Attempt != tc.attempts || !f.Now.Equal(now) || f.Error != e.Error {
				t.Errorf("claim: %+v", f)
			}
			r := f.Record
			if r.JobID != "j" || r.Number != tc.attempts || r.Outcome != e.Outcome || r.Worker != "w1" ||
				!r.StartedAt.Equal(started) || !r.FinishedAt.Equal(now) || string(r.Output) != "out" || r.Dropped != 7 ||
				r.Signal != "SIGTERM" || !equalIntPtr(r.ExitCode, e.ExitCode) || r.Error != e.Error {
				t.Errorf("history row: %+v", r)
			}
		})
	}
}

// Uncharged (interrupted) attempts keep their numbers but do not count
// against max_retries, nor in the backoff.
func TestRetryPolicyDecideUncharged(t *testing.T) {
	now := t0.Add(time.Hour)
	tests := []struct {
		name                         string
		attempts, uncharged, retries int
		state                        queue.State
		delay                        time.Duration
	}{
		{"first charged failure after an interrupt retries", 2, 1, 1, queue.StateFailed, 2 * time.Second},
		{"second charged failure after two interrupts", 4, 2, 3, queue.StateFailed, 4 * time.Second},
		{"charged failures past max_retries go dead", 3, 1, 1, queue.StateDead, 0},
		{"no retries: the first charged failure goes dead", 2, 1, 0, queue.StateDead, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			j := &queue.Job{ID: "j", Attempts: tc.attempts, Uncharged: tc.uncharged, MaxRetries: tc.retries,
				BackoffBase: 2, MaxBackoff: time.Hour, RunAt: t0}
			f := queue.RetryPolicy{}.Decide(j, "w", queue.End{Outcome: queue.OutcomeFailed}, now)
			if f.State != tc.state || f.Attempts != tc.attempts || f.Uncharged != tc.uncharged || f.Record.Number != tc.attempts {
				t.Fatalf("finish %s attempts %d uncharged %d number %d, want %s %d %d %d",
					f.State, f.Attempts, f.Uncharged, f.Record.Number, tc.state, tc.attempts, tc.uncharged, tc.attempts)
			}
			if tc.state == queue.StateFailed && !f.RunAt.Equal(now.Add(tc.delay)) {
				t.Errorf("retry in %s, want %s", f.RunAt.Sub(now), tc.delay)
			}
		})
	}
}

func TestRetryPolicyJitter(t *testing.T) {
	now := t0
	j := &queue.Job{ID: "j", Attempts: 2, MaxRetries: 5, BackoffBase: 2, MaxBackoff: time.Hour}
	const base = 4 * time.Second // 2^2
	tests := []struct {
		name   string
		jitter float64
		rand   func() float64
		want   time.Duration
	}{
		{"no jitter", 0, func() float64 { return 0.5 }, base},
		{"jitter without a source", 0.1, nil, base},
		{"rand 0", 0.1, func() float64 { return 0 }, base},
		{"rand 0.5", 0.1, func() float64 { return 0.5 }, base + 200*time.Millisecond},
		{"rand just below 1", 0.1, func() float64 { return 0.999999 }, base + time.Duration(float64(base)*0.1*0.999999)},
		{"quarter jitter", 0.25, func() float64 { return 0.5 }, base + 500*time.Millisecond},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := queue.RetryPolicy{Jitter: tc.jitter, Rand: tc.rand}
			f := p.Decide(j, "w", queue.End{Outcome: queue.OutcomeFailed}, now)
			got := f.RunAt.Sub(now)
			if got != tc.want {
				t.Errorf("delay %s, want %s", got, tc.want)
			}
			if hi := base + time.Duration(float64(base)*tc.jitter); got < base || (tc.jitter > 0 && got >= hi) {
				t.Errorf("delay %s outside [%s, %s)", got, base, hi)
			}
		})
	}

	t.Run("saturated delay does not overflow", func(t *testing.T) {
		huge := &queue.Job{ID: "j", Attempts: 1000, MaxRetries: 1000, BackoffBase: 2}
		p := queue.RetryPolicy{Jitter: 0.5, Rand: func() float64 { return 0.9 }}
		f := p.Decide(huge, "w", queue.End{Outcome: queue.OutcomeFailed}, now)
		if !f.RunAt.After(now) {
			t.Errorf("run_at %v is not after now %v", f.RunAt, now)
		}
	})
}

func TestDescribe(t *testing.T) {
	code := func(c int) *int { return &c }
	tests := []struct {
		name    string
		outcome queue.Outcome
		exit    *int
		signal  string
		want    string
	}{
		{"success", queue.OutcomeSucceeded, code(0), "", ""},
		{"exit 1", queue.OutcomeFailed, code(1), "", "exit status 1"},
		{"exit 127", queue.OutcomeFailed, code(127), "", "exit status 127: command not found"},
		{"exit 126", queue.OutcomeFailed, code(126), "", "exit status 126: command not executable"},
		{"signal", queue.OutcomeFailed, nil, "SIGSEGV", "killed by SIGSEGV"},
		{"timeout wins over the signal", queue.OutcomeTimedOut, nil, "SIGKILL", "timed out after 2m0s"},
		{"cancelled", queue.OutcomeCancelled, nil, "SIGTERM", "cancelled by user"},
		{"interrupted", queue.OutcomeInterrupted, nil, "SIGTERM", "interrupted by worker shutdown"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := queue.Describe(tc.outcome, tc.exit, tc.signal, 2*time.Minute, nil); got != tc.want {
				t.Errorf("Describe = %q, want %q", got, tc.want)
			}
		})
	}
}
