package queue

import (
	"fmt"
	"math"
	"time"
)

// Backoff returns the delay after the n-th failed attempt (n >= 1):
// base^n seconds, capped at max (no cap when max is 0).
func Backoff(base float64, n int, max time.Duration) time.Duration {
	if n < 1 {
		n = 1
	}
	secs := math.Pow(base, float64(n))
	limit := float64(math.MaxInt64) / float64(time.Second)
	if max > 0 && secs > max.Seconds() {
		return max
	}
	// secs == limit rounds up to 2^63 ns, which does not fit a Duration.
	if math.IsInf(secs, 0) || math.IsNaN(secs) || secs >= limit {
		return time.Duration(math.MaxInt64)
	}
	return time.Duration(secs * float64(time.Second))
}

// RetryPolicy decides what happens to a job after an attempt ends.
type RetryPolicy struct {
	// Jitter adds a random delay of up to this fraction of the backoff
	// (0.1 = up to 10 % longer), to spread retries of jobs that failed
	// together. 0 disables it.
	Jitter float64
	// Rand returns a number in [0,1); nil disables jitter.
	Rand func() float64
}

// End is how an attempt ended, as the engine observed it.
type End struct {
	Outcome  Outcome
	ExitCode *int
	Signal   string
	Error    string // failure reason; "" for success
	Started  time.Time
	Finished time.Time
	Output   []byte
	Dropped  int64
}

func (p RetryPolicy) delay(j *Job, n int) time.Duration {
	d := Backoff(j.BackoffBase, n, j.MaxBackoff)
	if p.Jitter > 0 && p.Rand != nil {
		extra := time.Duration(float64(d) * p.Jitter * p.Rand())
		if extra > 0 && d+extra > d {
			d += extra
		}
	}
	return d
}

// Describe builds the failure reason of an attempt from how it ended.
func Describe(outcome Outcome, exitCode *int, signal string, timeout time.Duration, startErr error) string {
	switch {
	case startErr != nil:
		return "could not start: " + startErr.Error()
	case outcome == OutcomeTimedOut:
		return fmt.Sprintf("timed out after %s", timeout)
	case outcome == OutcomeCancelled:
		return CancelledByUser
	case outcome == OutcomeInterrupted:
		return "interrupted by worker shutdown"
	case signal != "":
		return "killed by " + signal
	case exitCode != nil && *exitCode == 127:
		return "exit status 127: command not found"
	case exitCode != nil && *exitCode == 126:
		return "exit status 126: command not executable"
	case exitCode != nil && *exitCode != 0:
		return fmt.Sprintf("exit status %d", *exitCode)
	}
	return ""
}
