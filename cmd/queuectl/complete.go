package main

import (
	"context"
	"os"
	"strings"

	"github.com/queuectl/queuectl/internal/view"
	"github.com/queuectl/queuectl/queue"
	"github.com/spf13/cobra"
)

// Shell completion comes from cobra's generator (queuectl completion
// bash|zsh|fish|powershell). Job ids, queue names and cron template names
// complete from the database, where that is cheap: one bounded query, and
// never creating a database that does not exist yet.

// completeLimit bounds how many job ids one completion reads.
const completeLimit = 200

// completeArgs wires dynamic completion into the commands that take job
// ids, template names, queues or states.
func (a *app) completeArgs(root *cobra.Command) {
	jobs := func(states ...queue.State) cobra.CompletionFunc {
		return a.completeFrom(func(ctx context.Context, st queue.Store) ([]string, error) {
			js, err := st.ListJobs(ctx, queue.ListParams{States: states, Limit: completeLimit})
			var ids []string
			for _, j := range js {
				ids = append(ids, j.ID)
			}
			return ids, err
		})
	}
	templates := a.completeFrom(func(ctx context.Context, st queue.Store) ([]string, error) {
		ts, err := a.readTemplates(ctx, st, false)
		var names []string
		for _, t := range ts {
			names = append(names, t.Name)
		}
		return names, err
	})
	queues := a.completeFrom(func(ctx context.Context, st queue.Store) ([]string, error) {
		qs, err := st.Queues(ctx)
		names := []string{"default"}
		for _, q := range qs {
			if q.Name != "default" {
				names = append(names, q.Name)
			}
		}
		return names, err
	})
	states := func(_ *cobra.Command, _ []string, prefix string) ([]cobra.Completion, cobra.ShellCompDirective) {
		return withPrefix(view.FilterStateNames(), prefix), cobra.ShellCompDirectiveNoFileComp
	}
	byPath := map[string]cobra.CompletionFunc{
		"queuectl show":         jobs(),
		"queuectl output":       jobs(),
		"queuectl cancel":       jobs(queue.StatePending, queue.StateFailed, queue.StateProcessing),
		"queuectl retry":        jobs(queue.StateFailed, queue.StateDead),
		"queuectl dlq retry":    jobs(queue.StateDead),
		"queuectl cron next":    templates,
		"queuectl cron trigger": templates,
	}
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		if f, ok := byPath[c.CommandPath()]; ok {
			c.ValidArgsFunction = f
		}
		if c.Flags().Lookup("queue") != nil {
			c.RegisterFlagCompletionFunc("queue", queues)
		}
		if c.Flags().Lookup("state") != nil {
			c.RegisterFlagCompletionFunc("state", states)
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
}

// completeFrom turns a store query into a completion function. Errors and
// a missing SQLite file complete nothing rather than failing the shell.
func (a *app) completeFrom(list func(context.Context, queue.Store) ([]string, error)) cobra.CompletionFunc {
	return func(cmd *cobra.Command, _ []string, prefix string) ([]cobra.Completion, cobra.ShellCompDirective) {
		dsn, err := a.dsn()
		if err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		if !isPostgresURL(dsn) {
			if _, err := os.Stat(dsn); err != nil {
				return nil, cobra.ShellCompDirectiveNoFileComp
			}
		}
		ctx := cmd.Context()
		if ctx == nil {
			ctx = context.Background()
		}
		st, err := openStore(ctx, dsn)
		if err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		defer st.Close()
		names, _ := list(ctx, st)
		return withPrefix(names, prefix), cobra.ShellCompDirectiveNoFileComp
	}
}

func withPrefix(names []string, prefix string) []cobra.Completion {
	var out []cobra.Completion
	for _, n := range names {
		if strings.HasPrefix(n, prefix) {
			out = append(out, n)
		}
	}
	return out
}
