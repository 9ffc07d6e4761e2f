package main

// The commands that act on stored jobs: dlq, retry, cancel, cleanup.
// (jobs.go has the ones that read them.)

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/queuectl/queuectl/queue"
	"github.com/spf13/cobra"
)

func (a *app) dlqCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "dlq", Short: "The dead-letter queue: jobs whose retries are exhausted"}
	var asJSON bool
	var limit int
	list := &cobra.Command{
		Use:   "list",
		Short: "List dead jobs",
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if limit < 0 {
				return usagef("dlq list: --limit %d: must be 0 (no limit) or more", limit)
			}
			return a.withReadStore(cmd, func(ctx context.Context, st queue.Store) error {
				jobs, err := st.ListJobs(ctx, queue.ListParams{States: []queue.State{queue.StateDead}, Limit: limit})
				if err != nil {
					return err
				}
				return a.printJobs(jobs, asJSON)
			})
		},
	}
	list.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	list.Flags().IntVar(&limit, "limit", 0, "at most this many jobs (0: all)")
	var all bool
	retry := &cobra.Command{
		Use:   "retry ID... | --all",
		Short: "Send dead jobs back to pending with their attempts reset",
		RunE: func(cmd *cobra.Command, args []string) error {
			switch {
			case all && len(args) > 0:
				return usagef("dlq retry: give job ids or --all, not both")
			case !all && len(args) == 0:
				return usagef("dlq retry: give the ids of dead jobs, or --all")
			}
			return a.withStore(cmd, func(ctx context.Context, st queue.Store) error {
				if !all {
					for _, id := range args {
						j, err := st.GetJob(ctx, id)
						if err != nil {
							return err
						}
						if j.State != queue.StateDead {
							return fmt.Errorf("job %q is %s, not dead: %w", id, j.State, queue.ErrConflict)
						}
					}
				}
				moved, err := st.RetryJobs(ctx, queue.RetryParams{IDs: args, AllDead: all, Now: a.now()})
				if err != nil {
					return err
				}
				for _, id := range moved {
					fmt.Fprintln(a.stdout, id)
				}
				if all && len(moved) == 0 {
					fmt.Fprintln(a.stderr, "the dead-letter queue is empty")
				}
				return nil
			})
		},
	}
	retry.Flags().BoolVar(&all, "all", false, "retry every dead job")
	cmd.AddCommand(list, retry)
	return cmd
}

func (a *app) retryCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "retry ID...",
		Short: "Run failed or dead jobs again now",
		Long: `Move failed jobs (waiting for their backoff) or dead jobs back to pending,
runnable now. A dead job's attempts are reset; a failed job keeps its count.`,
		Args: minArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return a.withStore(cmd, func(ctx context.Context, st queue.Store) error {
				moved, err := st.RetryJobs(ctx, queue.RetryParams{IDs: args, Now: a.now()})
				if err != nil {
					return err
				}
				for _, id := range moved {
					fmt.Fprintln(a.stdout, id)
				}
				return nil
			})
		},
	}
}

func (a *app) cancelCmd() *cobra.Command {
	var wait time.Duration
	cmd := &cobra.Command{
		Use:   "cancel ID",
		Short: "Cancel a pending, failed or running job",
		Long: `Cancel a job. A pending or failed job is cancelled at once; for a running job
its worker stops the command's process group, and this command waits until
the job is cancelled (or has finished first), for at most --wait; with
--wait 0 it only records the request.`,
		Args: exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			// Checked before the cancel is stored: bad input changes nothing.
			if wait < 0 {
				return usagef("cancel: --wait %s: must not be negative", flagDuration(wait))
			}
			return a.withStore(cmd, func(ctx context.Context, st queue.Store) error {
				was, err := st.CancelJob(ctx, args[0], a.now())
				if err != nil {
					return err
				}
				switch {
				case was != queue.StateProcessing:
					fmt.Fprintf(a.stdout, "%s cancelled\n", args[0])
					return nil
				case wait == 0:
					fmt.Fprintf(a.stdout, "%s: cancel requested; its worker stops it\n", args[0])
					return nil
				}
				return a.waitCancelled(ctx, st, args[0], wait)
			})
		},
	}
	durationVar(cmd.Flags(), &wait, "wait", time.Minute, "how long to wait for a running job to stop (0: do not wait)")
	return cmd
}

func (a *app) waitCancelled(ctx context.Context, st queue.Store, id string, wait time.Duration) error {
	deadline := time.Now().Add(wait)
	for {
		j, err := st.GetJob(ctx, id)
		if err != nil {
			return err
		}
		switch {
		case j.State == queue.StateCancelled:
			fmt.Fprintf(a.stdout, "%s cancelled\n", id)
			return nil
		case j.State != queue.StateProcessing:
			return fmt.Errorf("job %q ended as %s before its worker stopped it", id, j.State)
		case time.Now().After(deadline):
			return fmt.Errorf("job %q: cancel requested, but its worker has not stopped it within %s (is the worker alive?)", id, wait)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}

func (a *app) cleanupCmd() *cobra.Command {
	var olderThan string
	var states []string
	var dryRun bool
	cmd := &cobra.Command{
		Use:   "cleanup --older-than DUR [--state S] [--dry-run]",
		Short: "Delete finished jobs and their output",
		Long: `Delete completed and cancelled jobs (with their history and output) last
updated longer ago than --older-than. Dead jobs are the record of what
failed: they are deleted only when asked for with --state dead. --dry-run
counts what would go and deletes nothing. A service's retention block does
the same continuously (docs/operations.md).`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if olderThan == "" {
				return usagef("cleanup: --older-than is required (e.g. 7d, 12h)")
			}
			d, err := queue.ParseDuration(olderThan)
			if err != nil {
				return usageError{fmt.Errorf("cleanup: --older-than: %w", err)}
			}
			p := queue.DeleteParams{Before: a.now().Add(-d), States: []queue.State{queue.StateCompleted, queue.StateCancelled}, DryRun: dryRun}
			if len(states) > 0 {
				p.States = nil
			}
			for _, state := range states {
				s, err := queue.ParseState(state)
				if err != nil || !s.Finished() {
					return usagef("cleanup: --state %q: only finished jobs can be deleted (completed, dead, cancelled)", state)
				}
				if !slices.Contains(p.States, s) {
					p.States = append(p.States, s)
				}
			}
			with := a.withStore
			if dryRun {
				with = a.withReadStore // it only counts
			}
			return with(cmd, func(ctx context.Context, st queue.Store) error {
				n, err := st.DeleteJobs(ctx, p)
				if err != nil {
					return err
				}
				verb := "deleted"
				if dryRun {
					verb = "would delete"
				}
				_, err = fmt.Fprintf(a.stdout, "%s %d job(s)\n", verb, n)
				return err
			})
		},
	}
	cmd.Flags().StringVar(&olderThan, "older-than", "", "delete jobs last updated longer ago than this (e.g. 7d)")
	cmd.Flags().StringArrayVar(&states, "state", nil, "only this state: completed, dead or cancelled, repeatable (default: completed and cancelled; dead only when named)")
	cmd.Flags().BoolVar(&dryRun, "dry-run", false, "count the jobs that would be deleted; delete nothing")
	return cmd
}
