package main

// The commands that read stored jobs: status, list, show, output.
// (actions.go has the ones that change them.)

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/queuectl/queuectl/internal/supervise"
	"github.com/queuectl/queuectl/internal/view"
	"github.com/queuectl/queuectl/queue"
	"github.com/spf13/cobra"
)

func (a *app) statusCmd() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "status",
		Short: "Show job counts by state and queue, and active workers",
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return a.withReadStore(cmd, func(ctx context.Context, st queue.Store) error {
				counts, err := st.CountJobs(ctx)
				if err != nil {
					return err
				}
				scheduled, err := st.CountScheduled(ctx, a.now())
				if err != nil {
					return err
				}
				ws, err := st.ListWorkers(ctx)
				if err != nil {
					return err
				}
				controls, err := st.QueueControls(ctx)
				if err != nil {
					return err
				}
				// A worker killed with no other left to unregister it stays
				// registered: only the live ones count.
				now, err := supervise.HeartbeatNow(ctx, st, a.now())
				if err != nil {
					return err
				}
				host := a.hostName()
				alive, busy, gone := 0, 0, 0
				for _, w := range ws {
					switch {
					case !supervise.Alive(w, host, now):
						gone++
					case len(w.CurrentJobs) > 0:
						alive, busy = alive+1, busy+1
					default:
						alive++
					}
				}
				status := view.NewStatus(counts, scheduled, alive).WithPaused(controls)
				if asJSON {
					return a.printJSON(status)
				}
				tw := a.table()
				fmt.Fprint(tw, "QUEUE")
				for _, s := range view.StatusStates() {
					fmt.Fprintf(tw, "\t%s", strings.ToUpper(string(s)))
				}
				fmt.Fprintln(tw)
				for _, q := range status.QueueNames() {
					fmt.Fprint(tw, q)
					for _, s := range view.StatusStates() {
						fmt.Fprintf(tw, "\t%d", status.Queues[q][s])
					}
					fmt.Fprintln(tw)
				}
				fmt.Fprint(tw, "total")
				for _, s := range view.StatusStates() {
					fmt.Fprintf(tw, "\t%d", status.Jobs[s])
				}
				fmt.Fprintln(tw)
				if err := tw.Flush(); err != nil {
					return err
				}
				gonePart := ""
				if gone > 0 {
					gonePart = fmt.Sprintf("; %d registered but gone or not heard from in %s (worker list)", gone, view.WorkerAlive)
				}
				if _, err = fmt.Fprintf(a.stdout, "\nworkers: %d active (%d busy)%s\n", alive, busy, gonePart); err != nil {
					return err
				}
				if len(status.Paused) > 0 {
					_, err = fmt.Fprintf(a.stdout, "paused queues: %s\n", strings.Join(status.Paused, ", "))
				}
				return err
			})
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

// printJobs prints jobs as a table or JSON.
func (a *app) printJobs(jobs []*queue.Job, asJSON bool) error {
	if asJSON {
		return a.printJSON(view.Jobs(jobs))
	}
	tw := a.table()
	now := a.now()
	fmt.Fprintln(tw, "ID\tQUEUE\tSTATE\tATTEMPTS\tPRIORITY\tRUN AT\tUPDATED\tCOMMAND")
	for _, j := range jobs {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d/%d\t%d\t%s\t%s\t%s\n", j.ID, j.Queue, printable(shownState(j, now)), j.Attempts, j.MaxAttempts(),
			j.Priority, fmtTime(j.RunAt), fmtTime(j.UpdatedAt), truncate(j.Command, 50))
	}
	return tw.Flush()
}

// shownState is a job's state as list and show print it: a waiting job
// with the jobs it waits for, a pending job due later as scheduled.
func shownState(j *queue.Job, now time.Time) string {
	if j.State == queue.StateWaiting {
		return "waiting (after " + strings.Join(j.After, ", ") + ")"
	}
	return string(view.ShownState(j, now))
}

func (a *app) listCmd() *cobra.Command {
	var asJSON bool
	var state, q string
	var labels []string
	var limit int
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List jobs, newest first",
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			p := queue.ListParams{Queue: q, Limit: limit}
			if state != "" {
				if err := view.FilterState(&p, state, a.now()); err != nil {
					return fmt.Errorf("--state: %w", err)
				}
			}
			if limit < 0 {
				return usagef("--limit %d: must be 0 (no limit) or more", limit)
			}
			var err error
			if p.Labels, err = queue.ParseLabels(labels); err != nil {
				return fmt.Errorf("--label: %w", err)
			}
			return a.withReadStore(cmd, func(ctx context.Context, st queue.Store) error {
				jobs, err := st.ListJobs(ctx, p)
				if err != nil {
					return err
				}
				return a.printJobs(jobs, asJSON)
			})
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	cmd.Flags().StringVar(&state, "state", "", "only jobs in this state: "+strings.Join(view.FilterStateNames(), ", "))
	cmd.Flags().StringVar(&q, "queue", "", "only jobs in this queue")
	cmd.Flags().IntVar(&limit, "limit", 100, "at most this many jobs (0: all)")
	cmd.Flags().StringArrayVar(&labels, "label", nil, "only jobs with this label, key=value (repeatable: all must match)")
	return cmd
}

func (a *app) showCmd() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "show ID",
		Short: "Show every field of a job and its attempt history",
		Args:  exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return a.withReadStore(cmd, func(ctx context.Context, st queue.Store) error {
				j, err := st.GetJob(ctx, args[0])
				if err != nil {
					return err
				}
				hist, err := st.Attempts(ctx, j.ID)
				if err != nil {
					return err
				}
				if asJSON {
					return a.printJSON(view.NewJobDetail(j, hist))
				}
				return a.printJob(j, hist)
			})
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

func (a *app) printJob(j *queue.Job, hist []*queue.Attempt) error {
	tw := a.table()
	timeout := "none"
	if j.Timeout > 0 {
		timeout = queue.FormatDuration(j.Timeout)
	}
	exit := "-"
	if j.ExitCode != nil {
		exit = strconv.Itoa(*j.ExitCode)
	}
	rows := [][2]string{
		{"id", j.ID}, {"queue", j.Queue}, {"command", j.Command}, {"state", shownState(j, a.now())},
		{"priority", strconv.Itoa(j.Priority)}, {"attempts", fmt.Sprintf("%d of at most %d", j.Attempts, j.MaxAttempts())},
		{"max_retries", strconv.Itoa(j.MaxRetries)}, {"timeout", timeout},
		{"backoff", fmt.Sprintf("base %g, max %s", j.BackoffBase, queue.FormatDuration(j.MaxBackoff))},
		{"run_at", fmtTime(j.RunAt)}, {"created_at", fmtTime(j.CreatedAt)}, {"updated_at", fmtTime(j.UpdatedAt)},
		{"started_at", fmtTime(j.StartedAt)}, {"finished_at", fmtTime(j.FinishedAt)}, {"exit_code", exit},
		{"error", dash(j.Error)}, {"worker", dash(j.Worker)},
	}
	if j.Template != "" {
		rows = append(rows, [2]string{"template", j.Template}, [2]string{"scheduled_at", fmtTime(j.ScheduledAt)})
	}
	if j.Dir != "" {
		rows = append(rows, [2]string{"dir", j.Dir})
	}
	if len(j.Labels) > 0 {
		rows = append(rows, [2]string{"labels", view.FormatLabels(j.Labels)})
	}
	if len(j.After) > 0 {
		rows = append(rows, [2]string{"after", strings.Join(j.After, ", ")})
	}
	if j.UniqueKey != "" {
		rows = append(rows, [2]string{"unique_key", j.UniqueKey})
	}
	for _, h := range [][2]string{{"on_success", j.Hooks.OnSuccess}, {"on_failure", j.Hooks.OnFailure}, {"on_dead", j.Hooks.OnDead}} {
		if h[1] != "" {
			rows = append(rows, h)
		}
	}
	if !j.Hooks.IsZero() {
		rows = append(rows, [2]string{"hook_timeout", queue.FormatDuration(j.Hooks.RunTimeout())})
	}
	for _, r := range rows {
		fmt.Fprintf(tw, "%s:\t%s\n", r[0], printable(r[1]))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(a.stdout, "\nhistory:")
	if len(hist) == 0 {
		fmt.Fprintln(a.stdout, "  (no attempts yet)")
		return nil
	}
	tw = a.table()
	fmt.Fprintln(tw, "  ATTEMPT\tSTARTED\tDURATION\tEXIT\tOUTCOME\tWORKER\tERROR")
	for _, h := range hist {
		exit := "-"
		if h.ExitCode != nil {
			exit = strconv.Itoa(*h.ExitCode)
		}
		if h.Signal != "" {
			exit = h.Signal
		}
		fmt.Fprintf(tw, "  %d\t%s\t%s\t%s\t%s\t%s\t%s\n", h.Number, fmtTime(h.StartedAt), h.Duration().Round(time.Millisecond),
			exit, h.Outcome, printable(dash(h.Worker)), printable(dash(h.Error)))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, h := range hist {
		if h.Dropped > 0 {
			fmt.Fprintf(a.stdout, "note: the output of attempt %d was truncated: %d bytes dropped (the cap per attempt, or retention)\n", h.Number, h.Dropped)
		}
	}
	return nil
}

func (a *app) outputCmd() *cobra.Command {
	var attempt, nth int
	var raw, follow bool
	cmd := &cobra.Command{
		Use:   "output ID",
		Short: "Print the captured output of a job's attempt (default: the latest), or follow it live",
		Long: `Print the captured output of a job's attempt (default: the latest).

A dead job retried by hand numbers its attempts from 1 again, so --attempt N
names the latest attempt numbered N; --nth K names the K-th attempt of the
history as show lists it (1 is the oldest).

With -f, follow the running attempt's output as it is printed, from the
start of the attempt, and exit when the attempt ends (a pending job: once
its attempt starts; a finished one: print its output and exit). Works from
any process and, on PostgreSQL, from any host.`,
		Args: exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			// 0 is the flags' "not given", so a given 0 is caught by Changed:
			// it would name the latest attempt, which no attempt is numbered.
			byNumber, byIndex := cmd.Flags().Changed("attempt"), cmd.Flags().Changed("nth")
			if byNumber && attempt < 1 {
				return usagef("--attempt %d: must be 1 or more", attempt)
			}
			if byIndex && nth < 1 {
				return usagef("--nth %d: must be 1 or more", nth)
			}
			if byNumber && byIndex {
				return usagef("output: --attempt and --nth each name an attempt; give one")
			}
			if follow && (byNumber || byIndex) {
				return usagef("output: --follow follows the running attempt; it does not go with --attempt or --nth")
			}
			return a.withReadStore(cmd, func(ctx context.Context, st queue.Store) error {
				if follow {
					_, err := a.follow(ctx, st, args[0], raw, false)
					return err
				}
				var at *queue.Attempt
				var err error
				if nth > 0 {
					at, err = st.OutputAt(ctx, args[0], nth-1)
				} else {
					at, err = st.Output(ctx, args[0], attempt)
				}
				if err != nil {
					return err
				}
				if _, err := a.stdout.Write(terminalOutput(at.Output, raw || !isTerminal(a.stdout))); err != nil {
					return err
				}
				if at.Dropped > 0 {
					fmt.Fprintf(a.stderr, "note: %d bytes of this output were dropped (the cap per attempt keeps the head and the tail; retention drops all)\n", at.Dropped)
				}
				return nil
			})
		},
	}
	cmd.Flags().IntVar(&attempt, "attempt", 0, "attempt number (default: the latest)")
	cmd.Flags().IntVar(&nth, "nth", 0, "the K-th attempt of the job's history, 1 the oldest (attempt numbers start over after a retry of a dead job)")
	cmd.Flags().BoolVarP(&follow, "follow", "f", false, "follow the running attempt's output live until it ends")
	cmd.Flags().BoolVar(&raw, "raw", false, "write the output as captured even to a terminal (control characters are escaped there by default)")
	return cmd
}
