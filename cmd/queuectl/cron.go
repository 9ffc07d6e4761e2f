package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/queuectl/queuectl/internal/view"
	"github.com/queuectl/queuectl/queue"
	"github.com/queuectl/queuectl/queue/postgres"
	"github.com/queuectl/queuectl/queue/sqlite"
	"github.com/queuectl/queuectl/scheduler"
	"github.com/spf13/cobra"
)

func (a *app) cronCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "cron",
		Short: "Recurring jobs: list them, show their next fire times, trigger one now",
		Long: `Recurring jobs are declared in a configuration file. Without -c FILE these
commands use the templates a service (queuectl run) last applied to the
store; with -c FILE they read the file (and trigger applies it first).`,
	}
	cmd.AddCommand(a.cronListCmd(), a.cronNextCmd(), a.cronTriggerCmd())
	return cmd
}

// templatesFor returns the templates to show: from the file when -c is
// given (with the store's state of templates of the same name), else from
// the store. The caller closes the store, which is nil when the command
// only reads (create false), the file was given, and its SQLite database
// does not exist yet: the file's templates are shown as never fired, and
// no database is created.
func (a *app) templatesFor(cmd *cobra.Command, create bool) ([]*queue.Template, queue.Store, error) {
	ctx := cmd.Context()
	st, err := a.openStore(cmd, sqlite.Options{MustExist: !create})
	if errors.Is(err, sqlite.ErrNoDatabase) && a.file.path != "" {
		f, err := a.configFile()
		if err != nil {
			return nil, nil, err
		}
		return templates(f), nil, nil
	}
	if err != nil {
		return nil, nil, err
	}
	ts, err := a.readTemplates(ctx, st, false)
	if err != nil {
		st.Close()
		return nil, nil, err
	}
	return ts, st, nil
}

// closeStore closes st unless it is nil (templatesFor).
func closeStore(st queue.Store) {
	if st != nil {
		st.Close()
	}
}

func (a *app) readTemplates(ctx context.Context, st queue.Store, apply bool) ([]*queue.Template, error) {
	stored, err := st.Templates(ctx)
	if err != nil || a.file.path == "" {
		return stored, err
	}
	f, err := a.configFile()
	if err != nil {
		return nil, err
	}
	if apply {
		if _, _, err := applyFile(ctx, st, f, nil, a.now()); err != nil {
			return nil, err
		}
		if stored, err = st.Templates(ctx); err != nil {
			return nil, err
		}
	}
	file := templates(f)
	for _, t := range file {
		for _, s := range stored {
			if s.Name == t.Name {
				t.Cursor, t.LastJob, t.LastFinished, t.PendingTrigger, t.PendingKind = s.Cursor, s.LastJob, s.LastFinished, s.PendingTrigger, s.PendingKind
			}
		}
	}
	return file, nil
}

// template finds one template by name (see templatesFor); the caller
// closes the store. With apply, the file is applied first, as run would,
// but only once the name is known to be in it (a typo changes nothing).
func (a *app) template(cmd *cobra.Command, name string, apply bool) (*queue.Template, queue.Store, error) {
	ts, st, err := a.templatesFor(cmd, apply)
	if err != nil {
		return nil, nil, err
	}
	t, err := findTemplate(ts, name)
	if err == nil && apply && a.file.path != "" {
		if ts, err = a.readTemplates(cmd.Context(), st, true); err == nil {
			t, err = findTemplate(ts, name)
		}
	}
	if err != nil {
		closeStore(st)
		return nil, nil, err
	}
	return t, st, nil
}

func findTemplate(ts []*queue.Template, name string) (*queue.Template, error) {
	for _, t := range ts {
		if t.Name == name {
			return t, nil
		}
	}
	names := ""
	for i, t := range ts {
		if i > 0 {
			names += ", "
		}
		names += t.Name
	}
	if names == "" {
		names = "none; apply a file with queuectl run, or pass -c FILE"
	}
	return nil, fmt.Errorf("recurring job %q: %w (known: %s)", name, queue.ErrNotFound, names)
}

func (a *app) cronListCmd() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List recurring jobs with their last and next fire and last outcome",
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ts, st, err := a.templatesFor(cmd, false)
			if err != nil {
				return err
			}
			defer closeStore(st)
			if asJSON {
				return a.printJSON(view.CronTemplates(ts, a.now(), 5))
			}
			now := a.now()
			tw := a.table()
			fmt.Fprintln(tw, "NAME\tSCHEDULE\tZONE\tQUEUE\tLAST FIRE\tNEXT FIRE\tLAST OUTCOME")
			for _, t := range ts {
				last, outcome := "-", "-"
				if t.LastJob != nil {
					last = fmtTime(t.LastJob.ScheduledAt)
				}
				if t.LastFinished != nil { // not a run still in progress
					outcome = string(t.LastFinished.State)
				}
				next := "never"
				if sc, err := scheduler.Parse(t); err == nil {
					if n := scheduler.NextAfter(sc, t.Cursor, now); !n.IsZero() {
						next = fmtTime(n)
					}
				}
				if !t.Enabled {
					next = "disabled"
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", printable(t.Name), printable(t.Schedule), printable(t.TimeZone), t.Queue, last, next, outcome)
			}
			return tw.Flush()
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

func (a *app) cronNextCmd() *cobra.Command {
	var n int
	cmd := &cobra.Command{
		Use:   "next NAME [-n 10]",
		Short: "Show the next fire times of a recurring job, in its zone and in UTC",
		Args:  exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if n < 1 || n > 10000 {
				return usagef("-n %d: must be from 1 to 10000", n)
			}
			t, st, err := a.template(cmd, args[0], false)
			if err != nil {
				return err
			}
			defer closeStore(st)
			sc, err := scheduler.Parse(t)
			if err != nil {
				return err
			}
			if !t.Enabled {
				fmt.Fprintf(a.stderr, "note: %s is disabled (enabled = false): these are the times it would fire\n", printable(t.Name))
			}
			tw := a.table()
			fmt.Fprintf(tw, "%s\tUTC\n", "LOCAL ("+t.TimeZone+")")
			at := scheduler.NextAfter(sc, t.Cursor, a.now())
			for i := 0; i < n && !at.IsZero(); i, at = i+1, sc.Next(at) {
				fmt.Fprintf(tw, "%s\t%s\n", at.In(sc.Location()).Format("2006-01-02 15:04:05 MST"), at.UTC().Format(time.RFC3339))
			}
			return tw.Flush()
		},
	}
	cmd.Flags().IntVarP(&n, "count", "n", 10, "how many fire times")
	return cmd
}

func (a *app) cronTriggerCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "trigger NAME",
		Short: "Run a recurring job now, through the queue, under its overlap policy",
		Args:  exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			t, st, err := a.template(cmd, args[0], true)
			if err != nil {
				return err
			}
			defer st.Close()
			d, err := scheduler.LoadDefaults(ctx, st)
			if err != nil {
				return err
			}
			now := a.now()
			res, err := scheduler.Fire(ctx, st, t, d, queue.FireManual, now, now, nil)
			switch {
			case err != nil:
				return err
			case res.Fired:
				fmt.Fprintln(a.stdout, res.JobID)
			case res.Queued: // no job yet: nothing on stdout
				fmt.Fprintf(a.stderr, "%s: %s\n", t.Name, res.Why(t.Overlap))
			default:
				return fmt.Errorf("%s not triggered: %s", t.Name, res.Why(t.Overlap))
			}
			return nil
		},
	}
	return cmd
}

func (a *app) migrateCmd() *cobra.Command {
	var to string
	cmd := &cobra.Command{
		Use:   "migrate [--to postgres://…]",
		Short: "Create or upgrade the database schema, or copy everything to PostgreSQL",
		Long: `Without --to: apply the schema migrations now (they also run on first use).

With --to URL: copy every job with its history and captured output, the
settings (config set), the declared queues and the recurring jobs from this
database (e.g. the SQLite file) to the PostgreSQL database at URL, in one
transaction. Stop workers and services first: one still running on this
database, or a job that is running, refuses the copy. The target must hold
no jobs. Then point the services at URL
(database = "postgres://…" in the file, or --db).`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if cmd.Flags().Changed("to") {
				return a.migrateTo(cmd, to)
			}
			dsn, err := a.createDSN()
			if err != nil {
				return err
			}
			n, version := 0, 0
			if isPostgresURL(dsn) {
				n, err = postgres.Migrate(cmd.Context(), dsn)
				version = postgres.LatestVersion()
			} else {
				n, err = sqlite.Migrate(cmd.Context(), dsn)
				version = sqlite.LatestVersion()
			}
			if err != nil {
				return err
			}
			_, err = fmt.Fprintf(a.stdout, "applied %d migration(s); schema version %d\n", n, version)
			return err
		},
	}
	cmd.Flags().StringVar(&to, "to", "", "copy everything to this PostgreSQL database (postgres://…)")
	return cmd
}
