package queue

import (
	"context"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Runner runs one attempt of a job. The executor package provides the real
// one (a shell in its own process group); tests use fakes. Cancelling ctx
// must stop the attempt (and its whole process tree) and return.
type Runner interface {
	Run(ctx context.Context, spec RunSpec) RunResult
}

// RunSpec is one attempt to run.
type RunSpec struct {
	Command string
	Env     []string // K=V entries added to the worker's environment
	Dir     string
	Timeout time.Duration
	// Live, when set, is for the runner to call once the command started,
	// with a function that returns the output so far and how many bytes
	// the command has written in all (safe to call from any goroutine).
	Live func(read func() (output []byte, written int64))
}

// RunResult is how an attempt ended, as the runner saw it.
type RunResult struct {
	ExitCode int    // -1 when killed by a signal or never started
	Signal   string // "SIGKILL" etc. when a signal ended it
	TimedOut bool
	Canceled bool // ctx was cancelled
	StartErr error
	Output   []byte
	Dropped  int64
	Started  time.Time
	Finished time.Time
}

// RunnerFunc adapts a function to the Runner interface.
type RunnerFunc func(ctx context.Context, spec RunSpec) RunResult

// Run calls f.
func (f RunnerFunc) Run(ctx context.Context, spec RunSpec) RunResult { return f(ctx, spec) }

// Environ is the environment a job's command gets on top of the worker's:
// QUEUECTL_JOB_ID, QUEUECTL_ATTEMPT, QUEUECTL_QUEUE, QUEUECTL_WORKER (the
// worker that claimed it), for cron jobs QUEUECTL_TEMPLATE and
// QUEUECTL_SCHEDULED_AT, then the job's own env.
func (j *Job) Environ() []string {
	env := make([]string, 0, 6+len(j.Env))
	env = append(env,
		"QUEUECTL_JOB_ID="+j.ID,
		"QUEUECTL_ATTEMPT="+strconv.Itoa(j.Attempts),
		"QUEUECTL_QUEUE="+j.Queue,
		"QUEUECTL_WORKER="+j.Worker,
	)
	if j.Template != "" {
		env = append(env, "QUEUECTL_TEMPLATE="+j.Template)
	}
	if !j.ScheduledAt.IsZero() {
		env = append(env, "QUEUECTL_SCHEDULED_AT="+j.ScheduledAt.UTC().Format(time.RFC3339))
	}
	keys := make([]string, 0, len(j.Env))
	for k := range j.Env {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if strings.HasPrefix(k, ReservedEnvPrefix) {
			continue // refused at enqueue; a job stored before that cannot hide from cleanup either
		}
		env = append(env, k+"="+j.Env[k])
	}
	return env
}

// end classifies a runner's result. reason is why the engine cancelled the
// attempt's context, if it did.
func end(res RunResult, reason Outcome, timeout time.Duration) End {
	e := End{Started: res.Started, Finished: res.Finished, Output: res.Output, Dropped: res.Dropped, Signal: res.Signal}
	if res.ExitCode >= 0 && res.StartErr == nil {
		code := res.ExitCode
		e.ExitCode = &code
	}
	switch {
	case res.StartErr != nil:
		e.Outcome = OutcomeFailed
	case res.Canceled && reason != "":
		e.Outcome = reason
	case res.TimedOut:
		e.Outcome = OutcomeTimedOut
	case res.Signal == "" && res.ExitCode == 0:
		e.Outcome = OutcomeSucceeded
	default:
		e.Outcome = OutcomeFailed
	}
	e.Error = Describe(e.Outcome, e.ExitCode, e.Signal, timeout, res.StartErr)
	return e
}
