package queue

import (
	"context"
	"strconv"
	"time"

	"github.com/rs/zerolog"
)

// HookTimeout is how long an outcome hook may run before its process group
// is stopped, unless its Hooks.Timeout says otherwise.
const HookTimeout = 30 * time.Second

// hook is one outcome hook to run.
type hook struct {
	name    string // on_success, on_failure, on_dead
	command string
}

// hooksFor lists the hooks a recorded outcome runs, in order: on_success
// when the job completed; on_failure after each failed attempt (the last
// one, which made the job dead, too), then on_dead. Other states (a retry
// after an interruption, a cancel) run none.
func (h Hooks) hooksFor(s State) []hook {
	var out []hook
	add := func(name, cmd string) {
		if cmd != "" {
			out = append(out, hook{name, cmd})
		}
	}
	switch s {
	case StateCompleted:
		add("on_success", h.OnSuccess)
	case StateFailed:
		add("on_failure", h.OnFailure)
	case StateDead:
		add("on_failure", h.OnFailure)
		add("on_dead", h.OnDead)
	}
	return out
}

// runHooks runs the hooks of an outcome this engine recorded (finish f of
// attempt j.Attempts of j), each in the job's directory with the job's
// environment and QUEUECTL_STATE and QUEUECTL_EXIT_CODE, under
// the hooks' timeout. A hook's failure is logged; the job stays as recorded.
func (e *Engine) runHooks(log zerolog.Logger, j *Job, f Finish) {
	hooks := j.Hooks.hooksFor(f.State)
	if len(hooks) == 0 {
		return
	}
	exit := ""
	if f.ExitCode != nil {
		exit = strconv.Itoa(*f.ExitCode)
	}
	env := append(j.Environ(), "QUEUECTL_STATE="+string(f.State), "QUEUECTL_EXIT_CODE="+exit)
	limit := j.Hooks.RunTimeout()
	for _, h := range hooks {
		// The runner stops the hook's process group at limit; the context
		// is only a backstop.
		ctx, cancel := context.WithTimeout(context.Background(), limit+time.Second)
		res := e.runner.Run(ctx, RunSpec{Command: h.command, Env: env, Dir: j.Dir, Timeout: limit})
		cancel()
		ev := log.Debug()
		if res.StartErr != nil || res.TimedOut || res.ExitCode != 0 {
			ev = log.Warn().Int("exit_code", res.ExitCode).Bool("timed_out", res.TimedOut).
				Str("output", string(res.Output[:min(len(res.Output), 500)]))
			if res.StartErr != nil {
				ev = ev.AnErr("start_error", res.StartErr)
			}
		}
		ev.Str("hook", h.name).Msg("hook ran")
	}
}
