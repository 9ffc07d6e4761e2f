package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/queuectl/queuectl/executor"
	"github.com/queuectl/queuectl/internal/duration"
	"github.com/queuectl/queuectl/internal/view"
	"github.com/queuectl/queuectl/queue"
	"github.com/spf13/cobra"
)

// exitTimeout is wait's exit code when --timeout ran out, as timeout(1)'s.
const exitTimeout = 124

// escapingWriter escapes, chunk by chunk, what a terminal would act on.
type escapingWriter struct{ w io.Writer }

func (e escapingWriter) Write(p []byte) (int, error) {
	if _, err := e.w.Write(terminalOutput(p, false)); err != nil {
		return 0, err
	}
	return len(p), nil
}

// outputWriter is where a job's output goes: stdout, escaped on a terminal
// unless raw.
func (a *app) outputWriter(raw bool) io.Writer {
	if raw || !isTerminal(a.stdout) {
		return a.stdout
	}
	return escapingWriter{a.stdout}
}

// follow streams a job's output (see queue.Follow).
func (a *app) follow(ctx context.Context, st queue.Store, id string, raw, untilFinal bool) (*queue.Job, error) {
	return queue.Follow(ctx, st, queue.FollowParams{
		JobID: id, Out: a.outputWriter(raw), Remainder: executor.Remainder, UntilFinal: untilFinal,
	})
}

func (a *app) waitCmd() *cobra.Command {
	var asJSON bool
	var timeout string
	cmd := &cobra.Command{
		Use:   "wait ID...",
		Short: "Wait until every named job is final (completed, dead or cancelled)",
		Long: `Wait until every named job is final. Exit status: 0 when all completed, 1 when
any ended dead or cancelled, 2 for an unknown id, 124 when --timeout ran out.
Woken by the database's job events (another process's or host's finish),
not by slow polling.`,
		Example: `  queuectl wait job1 job2 && echo both completed
  queuectl wait --timeout 10m --json job1`,
		Args: minArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			var limit time.Duration
			if timeout != "" {
				d, err := duration.Parse(timeout)
				if err != nil || d <= 0 {
					return usagef("wait: --timeout %q: want a positive duration such as 30s or 10m", timeout)
				}
				limit = d
			}
			return a.withReadStore(cmd, func(ctx context.Context, st queue.Store) error {
				jobs, err := a.waitJobs(ctx, st, args, limit)
				if err != nil {
					return err
				}
				if asJSON {
					if err := a.printJSON(view.Jobs(jobs)); err != nil {
						return err
					}
				} else {
					tw := a.table()
					fmt.Fprintln(tw, "ID\tSTATE\tEXIT\tERROR")
					for _, j := range jobs {
						code := "-"
						if j.ExitCode != nil {
							code = fmt.Sprint(*j.ExitCode)
						}
						fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", j.ID, j.State, code, truncate(dash(j.Error), 60))
					}
					if err := tw.Flush(); err != nil {
						return err
					}
				}
				for _, j := range jobs {
					if j.State != queue.StateCompleted {
						return silentError{exitFailure}
					}
				}
				return nil
			})
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print each job's final state as JSON")
	cmd.Flags().StringVar(&timeout, "timeout", "", "give up after this long (exit 124), e.g. 30s or 10m")
	return cmd
}

// waitJobs waits for ids to be final, at most limit (0: no limit). An
// unknown id is a usage error (exit 2); running out of time exits 124.
func (a *app) waitJobs(ctx context.Context, st queue.Store, ids []string, limit time.Duration) ([]*queue.Job, error) {
	if limit > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, limit)
		defer cancel()
	}
	jobs, err := queue.Wait(ctx, st, ids)
	switch {
	case errors.Is(err, queue.ErrNotFound):
		return nil, usageError{fmt.Errorf("wait: %w", err)}
	case errors.Is(err, context.DeadlineExceeded) && limit > 0:
		fmt.Fprintf(a.stderr, "queuectl: wait: not every job was final after %s\n", limit)
		return nil, silentError{exitTimeout}
	case err != nil:
		return nil, fmt.Errorf("wait: %w", err)
	}
	return jobs, nil
}

// awaitEnqueued is enqueue --wait: it waits for the job (following its
// output live with follow, else printing the final attempt's output once it
// is final) and exits with the job's exit code.
func (a *app) awaitEnqueued(ctx context.Context, st queue.Store, id string, follow bool) error {
	var j *queue.Job
	var err error
	if follow {
		j, err = a.follow(ctx, st, id, false, true)
	} else {
		var jobs []*queue.Job
		if jobs, err = queue.Wait(ctx, st, []string{id}); err == nil {
			j = jobs[0]
			var at *queue.Attempt
			at, err = st.Output(ctx, id, 0)
			if err == nil {
				_, err = a.outputWriter(false).Write(at.Output)
			} else if errors.Is(err, queue.ErrNotFound) {
				err = nil // cancelled before it ran
			}
		}
	}
	if err != nil {
		return fmt.Errorf("enqueue --wait: %w", err)
	}
	return jobExit(j)
}

// jobExit is the exit status of a finished job run like a command: its
// own exit code, or 1 when it did not complete and has none.
func jobExit(j *queue.Job) error {
	code := exitFailure
	if j.ExitCode != nil {
		code = *j.ExitCode
	}
	if j.State == queue.StateCompleted {
		code = 0
	} else if code == 0 {
		code = exitFailure
	}
	if code == 0 {
		return nil
	}
	return silentError{code}
}
