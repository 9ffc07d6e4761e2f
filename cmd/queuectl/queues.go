package main

import (
	"context"
	"fmt"
	"time"

	"github.com/queuectl/queuectl/internal/view"
	"github.com/queuectl/queuectl/queue"
	"github.com/spf13/cobra"
)

func (a *app) queueCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "queue",
		Short: "List queues, pause and resume them, set their global limits",
		Long: `Steer queues. A pause and the limits are stored in the database: every worker
and service on every host obeys them from its next claim (within a second);
jobs already running finish.`,
	}
	cmd.AddCommand(a.queueListCmd(), a.queuePauseCmd(true), a.queuePauseCmd(false), a.queueSetCmd())
	return cmd
}

func (a *app) queueListCmd() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List queues: pause, limits, job counts and the oldest pending job's age",
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return a.withReadStore(cmd, func(ctx context.Context, st queue.Store) error {
				qs, err := view.LoadQueues(ctx, st, a.now())
				if err != nil {
					return err
				}
				if asJSON {
					return a.printJSON(qs)
				}
				tw := a.table()
				fmt.Fprintln(tw, "NAME\tPAUSED\tCONCURRENCY\tMAX RUNNING\tRATE LIMIT\tPENDING\tSCHEDULED\tRUNNING\tDEAD\tOLDEST PENDING")
				for _, q := range qs {
					fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%d\t%d\t%d\t%d\t%s\n", q.Name, yesNo(q.Paused),
						orDash(q.Concurrency), orDash(q.MaxRunning), dash(deref(q.RateLimit)),
						q.Jobs[queue.StatePending], q.Scheduled, q.Jobs[queue.StateProcessing],
						q.Jobs[queue.StateDead], age(q.OldestPendingAgeSeconds))
				}
				return tw.Flush()
			})
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

func orDash(n int) string {
	if n == 0 {
		return "-"
	}
	return fmt.Sprint(n)
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

func age(secs *float64) string {
	if secs == nil {
		return "-"
	}
	return (time.Duration(*secs) * time.Second).Round(time.Second).String()
}

func (a *app) queuePauseCmd(pause bool) *cobra.Command {
	use, short := "resume NAME...", "Resume paused queues"
	if pause {
		use, short = "pause NAME...", "Pause queues: no job of theirs starts until resumed (running jobs finish)"
	}
	return &cobra.Command{
		Use:   use,
		Short: short,
		Args:  minArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return a.updateQueues(cmd, queue.ControlUpdate{Names: args, Paused: &pause})
		},
	}
}

func (a *app) queueSetCmd() *cobra.Command {
	var maxRunning int
	var rate string
	cmd := &cobra.Command{
		Use:   "set NAME... [--max-running N] [--rate-limit 10/s]",
		Short: "Set queues' global limits, enforced by every claim on every host",
		Long: `Set queues' global limits, enforced in the claim itself so they hold across
processes and hosts:
  --max-running N    at most N jobs of the queue running at once, everywhere (0: no limit)
  --rate-limit R     at most COUNT starts in any PERIOD: "10/s", "100/m", "1000/h", "5/30s" (0: no limit)
A configuration file's queue block sets them again when its service starts
or reloads.`,
		Example: `  queuectl queue set api --max-running 4 --rate-limit 10/s
  queuectl queue set api --rate-limit 0`,
		Args: minArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			u := queue.ControlUpdate{Names: args}
			if cmd.Flags().Changed("max-running") {
				u.MaxRunning = &maxRunning
			}
			if cmd.Flags().Changed("rate-limit") {
				r, err := queue.ParseRateLimit(rate)
				if err != nil {
					return usageError{fmt.Errorf("queue set: --rate-limit: %w", err)}
				}
				u.Rate = &r
			}
			if u.MaxRunning == nil && u.Rate == nil {
				return usagef("queue set: give --max-running or --rate-limit")
			}
			return a.updateQueues(cmd, u)
		},
	}
	cmd.Flags().IntVar(&maxRunning, "max-running", 0, "at most this many jobs of the queue running at once, everywhere (0: no limit)")
	cmd.Flags().StringVar(&rate, "rate-limit", "", `at most this many starts per period, e.g. "10/s", "100/m" (0: no limit)`)
	return cmd
}

// updateQueues checks u before it opens the database, so bad input
// changes nothing.
func (a *app) updateQueues(cmd *cobra.Command, u queue.ControlUpdate) error {
	if err := u.Check(); err != nil {
		return usageError{fmt.Errorf("%s: %w", commandName(cmd), err)}
	}
	return a.withStore(cmd, func(ctx context.Context, st queue.Store) error {
		return st.UpdateQueueControls(ctx, u)
	})
}
