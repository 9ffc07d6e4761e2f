package main

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/queuectl/queuectl/internal/view"
	"github.com/queuectl/queuectl/queue"
	"github.com/spf13/cobra"
)

// configCmd runs past 80 lines because of its help text: the code is a
// short get/set/list switch.
func (a *app) configCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "config",
		Short: "Show or change the defaults copied onto new jobs",
		Long: `Defaults copied onto each job at enqueue time (a job, or its queue in a
service's HCL file, may override them):

  max-retries    retries after the first attempt (0..1000, default 3)
  backoff-base   the n-th failure waits base^n seconds (1..100, default 2)
  max-backoff    cap on that wait (1s..30d, default 1h)
  timeout        job timeout (none or 0 for none, else 1ms to 30d; default none)

Keys may be spelled with underscores (max_retries).`,
	}
	var asJSON bool
	get := &cobra.Command{
		Use:     "get [KEY]",
		Aliases: []string{"show"},
		Short:   "Show one or all settings",
		Args:    maxArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			keys := queue.SettingKeys()
			if len(args) == 1 {
				k, err := queue.NormalizeKey(args[0])
				if err != nil {
					return err
				}
				keys = []string{k}
			}
			return a.withReadStore(cmd, func(ctx context.Context, st queue.Store) error {
				kv, err := st.GetConfig(ctx)
				if err != nil {
					return err
				}
				s, err := queue.SettingsFrom(kv)
				if err != nil {
					return err
				}
				if asJSON {
					out := map[string]string{}
					for _, k := range keys {
						out[k] = s.Get(k)
					}
					return a.printJSON(out)
				}
				if len(args) == 1 {
					_, err := fmt.Fprintln(a.stdout, s.Get(keys[0]))
					return err
				}
				tw := a.table()
				fmt.Fprintln(tw, "KEY\tVALUE\tSOURCE")
				for _, k := range keys {
					src := "default"
					if _, ok := kv[k]; ok {
						src = "set"
					}
					fmt.Fprintf(tw, "%s\t%s\t%s\n", k, s.Get(k), src)
				}
				return tw.Flush()
			})
		},
	}
	get.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	set := &cobra.Command{
		Use:   "set KEY VALUE",
		Short: "Change a setting",
		Args:  exactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			k, v, err := queue.CheckSetting(args[0], args[1])
			if err != nil {
				return err
			}
			return a.withStore(cmd, func(ctx context.Context, st queue.Store) error {
				if err := st.SetConfig(ctx, k, v); err != nil {
					return err
				}
				_, err := fmt.Fprintf(a.stdout, "%s = %s\n", k, v)
				return err
			})
		},
	}
	set.Flags().SetInterspersed(false) // so "config set max-retries -3" reaches the range check
	cmd.AddCommand(get, set)
	return cmd
}

func (a *app) statsCmd() *cobra.Command {
	var asJSON bool
	var since string
	cmd := &cobra.Command{
		Use:   "stats",
		Short: "Counts, failure rate, run times, throughput and slowest jobs, per queue",
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			window, err := queue.ParseDuration(since)
			if err != nil || window <= 0 {
				return usagef("--since %q: use a duration such as 24h or 7d", since)
			}
			return a.withReadStore(cmd, func(ctx context.Context, st queue.Store) error {
				return a.printStats(ctx, st, window, asJSON)
			})
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	cmd.Flags().StringVar(&since, "since", "24h", "window of attempts for run times and failure rate")
	return cmd
}

func (a *app) printStats(ctx context.Context, st queue.Store, window time.Duration, asJSON bool) error {
	stats, err := view.LoadStats(ctx, st, window, a.now())
	if err != nil {
		return err
	}
	if asJSON {
		return a.printJSON(stats)
	}
	tw := a.table()
	fmt.Fprintf(tw, "QUEUE\tJOBS\tATTEMPTS (%s)\tFAILURE RATE\tMIN\tP50\tP95\tP99\tMAX\tDONE/MIN (1H)\n", queue.FormatDuration(window))
	for _, s := range append([]*view.QueueStats{stats.Total}, stats.Queues...) {
		r := s.RunTimeMS
		name := s.Queue
		if s == stats.Total {
			name = "total" // as status names it
		}
		// No attempt in the window: no rate and no run times, rather
		// than 0.0% and 0ms.
		rate, times := "-", "-\t-\t-\t-\t-"
		if s.Attempts > 0 {
			rate = fmt.Sprintf("%.1f%%", 100*s.FailureRate)
		}
		if s.Timed() {
			times = strings.Join([]string{ms(r.Min), ms(r.P50), ms(r.P95), ms(r.P99), ms(r.Max)}, "\t")
		}
		done := fmt.Sprintf("%.1f", s.PerMinuteHour)
		if s.PerMinuteHour == 0 && s.LastHour > 0 {
			done = "<0.1" // a few jobs an hour: not none
		}
		fmt.Fprintf(tw, "%s\t%d\t%d\t%s\t%s\t%s\n", name, s.Total(), s.Attempts, rate, times, done)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if len(stats.Slowest) > 0 {
		fmt.Fprintln(a.stdout, "\nslowest attempts:")
		tw = a.table()
		for _, j := range stats.Slowest {
			fmt.Fprintf(tw, "  %s\t%s\t%s\n", j.ID, j.Queue, ms(j.DurationMS))
		}
		return tw.Flush()
	}
	return nil
}

func ms(v int64) string {
	if v >= 10_000 {
		return fmt.Sprintf("%.1fs", float64(v)/1000)
	}
	return fmt.Sprintf("%dms", v)
}
