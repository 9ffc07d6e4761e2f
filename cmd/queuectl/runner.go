package main

import (
	"context"
	"slices"

	"github.com/queuectl/queuectl/executor"
	"github.com/queuectl/queuectl/queue"
)

// shellRunner adapts the executor to the engine's Runner interface. env
// goes before each job's own variables (see jobDBEnv).
type shellRunner struct {
	exec *executor.Executor
	env  []string
}

var _ queue.Runner = shellRunner{}

func (r shellRunner) Run(ctx context.Context, s queue.RunSpec) queue.RunResult {
	res := r.exec.Run(ctx, executor.Command{Script: s.Command, Env: append(slices.Clip(r.env), s.Env...), Dir: s.Dir, Timeout: s.Timeout, Live: s.Live})
	return queue.RunResult{
		ExitCode: res.ExitCode, Signal: res.Signal, TimedOut: res.TimedOut, Canceled: res.Canceled,
		StartErr: res.StartErr, Output: res.Output, Dropped: res.Dropped, Started: res.Started, Finished: res.Finished,
	}
}
