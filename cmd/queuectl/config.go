package main

import (
	"context"
	"fmt"
	"math"
	"sort"
	"time"

	"github.com/queuectl/queuectl/queue"
	"github.com/spf13/cobra"
)

func (a *app) configCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "config",
		Short: "Show or change the defaults copied onto new jobs",
		Long: `Defaults copied onto each job at enqueue time (a job, or its queue in a
service's HCL file, may override them):

  max-retries    retries after the first attempt (0..1000, default 3)
  backoff-base   the n-th failure waits base^n seconds (1..100, default 2)
  max-backoff    cap on that wait (1s..30d, default 1h)
  timeout        job timeout (0 for none, up to 30d; default none)

Keys may be spelled with underscores (max_retries).`,
	}
	var asJSON bool
	get := &cobra.Command{
		Use:   "get [KEY]",
		Short: "Show one or all settings",
		Args:  cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			keys := queue.SettingKeys()
			if len(args) == 1 {
				k, err := queue.NormalizeKey(args[0])
				if err != nil {
					return err
				}
				keys = []string{k}
			}
			return a.withStore(cmd, func(ctx context.Context, st queue.Store) error {
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
		Args:  cobra.ExactArgs(2),
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

// queueStats summarizes finished attempts of one queue (or all).
type queueStats struct {
	Queue         string         `json:"queue"`
	Jobs          map[string]int `json:"jobs"`
	Attempts      int            `json:"attempts"`
	Failed        int            `json:"failed_attempts"`
	FailureRate   float64        `json:"failure_rate"`
	RunTimeMS     runTimes       `json:"run_time_ms"`
	LastHour      int            `json:"completed_last_hour"`
	PerMinuteHour float64        `json:"throughput_per_minute_last_hour"`
	durations     []time.Duration
}

type runTimes struct {
	Min int64 `json:"min"`
	P50 int64 `json:"p50"`
	P95 int64 `json:"p95"`
	P99 int64 `json:"p99"`
	Max int64 `json:"max"`
}

type slowJob struct {
	ID         string `json:"id"`
	Queue      string `json:"queue"`
	DurationMS int64  `json:"duration_ms"`
}

func (a *app) statsCmd() *cobra.Command {
	var asJSON bool
	var since string
	cmd := &cobra.Command{
		Use:   "stats",
		Short: "Counts, failure rate, run times, throughput and slowest jobs, per queue",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			window, err := queue.ParseDuration(since)
			if err != nil || window <= 0 {
				return usagef("--since %q: use a duration such as 24h or 7d", since)
			}
			return a.withStore(cmd, func(ctx context.Context, st queue.Store) error {
				return a.printStats(ctx, st, window, asJSON)
			})
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	cmd.Flags().StringVar(&since, "since", "24h", "window of attempts for run times and failure rate")
	return cmd
}

func (a *app) printStats(ctx context.Context, st queue.Store, window time.Duration, asJSON bool) error {
	now := a.now()
	counts, err := st.CountJobs(ctx)
	if err != nil {
		return err
	}
	attempts, err := st.AttemptStats(ctx, now.Add(-window))
	if err != nil {
		return err
	}
	all := &queueStats{Queue: "*", Jobs: map[string]int{}}
	per := map[string]*queueStats{}
	pick := func(q string) *queueStats {
		if per[q] == nil {
			per[q] = &queueStats{Queue: q, Jobs: map[string]int{}}
		}
		return per[q]
	}
	for _, c := range counts {
		all.Jobs[string(c.State)] += c.N
		pick(c.Queue).Jobs[string(c.State)] += c.N
	}
	var slow []slowJob
	for _, at := range attempts {
		for _, s := range []*queueStats{all, pick(at.Queue)} {
			s.Attempts++
			if at.Outcome != queue.OutcomeSucceeded && at.Outcome != queue.OutcomeInterrupted {
				s.Failed++
			}
			s.durations = append(s.durations, at.Duration)
			if at.Outcome == queue.OutcomeSucceeded && now.Sub(at.FinishedAt) <= time.Hour {
				s.LastHour++
			}
		}
		slow = append(slow, slowJob{at.JobID, at.Queue, at.Duration.Milliseconds()})
	}
	sort.Slice(slow, func(i, j int) bool { return slow[i].DurationMS > slow[j].DurationMS })
	slow = slow[:min(5, len(slow))]
	var queues []string
	for q := range per {
		queues = append(queues, q)
	}
	sort.Strings(queues)
	list := []*queueStats{all}
	for _, q := range queues {
		list = append(list, per[q])
	}
	for _, s := range list {
		s.finish()
	}
	if asJSON {
		if slow == nil {
			slow = []slowJob{}
		}
		return a.printJSON(struct {
			Window  string        `json:"window"`
			Total   *queueStats   `json:"total"`
			Queues  []*queueStats `json:"queues"`
			Slowest []slowJob     `json:"slowest"`
		}{queue.FormatDuration(window), all, list[1:], slow})
	}
	tw := a.table()
	fmt.Fprintf(tw, "QUEUE\tJOBS\tATTEMPTS (%s)\tFAILURE RATE\tMIN\tP50\tP95\tP99\tMAX\tDONE/MIN (1H)\n", queue.FormatDuration(window))
	for _, s := range list {
		total := 0
		for _, n := range s.Jobs {
			total += n
		}
		r := s.RunTimeMS
		fmt.Fprintf(tw, "%s\t%d\t%d\t%.1f%%\t%s\t%s\t%s\t%s\t%s\t%.1f\n", s.Queue, total, s.Attempts, 100*s.FailureRate,
			ms(r.Min), ms(r.P50), ms(r.P95), ms(r.P99), ms(r.Max), s.PerMinuteHour)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if len(slow) > 0 {
		fmt.Fprintln(a.stdout, "\nslowest attempts:")
		tw = a.table()
		for _, j := range slow {
			fmt.Fprintf(tw, "  %s\t%s\t%s\n", j.ID, j.Queue, ms(j.DurationMS))
		}
		return tw.Flush()
	}
	return nil
}

func (s *queueStats) finish() {
	if s.Attempts > 0 {
		s.FailureRate = float64(s.Failed) / float64(s.Attempts)
	}
	s.PerMinuteHour = math.Round(float64(s.LastHour)/60*10) / 10
	d := s.durations
	if len(d) == 0 {
		return
	}
	sort.Slice(d, func(i, j int) bool { return d[i] < d[j] })
	pct := func(p float64) int64 {
		i := int(math.Ceil(p*float64(len(d)))) - 1
		return d[max(0, min(i, len(d)-1))].Milliseconds()
	}
	s.RunTimeMS = runTimes{Min: d[0].Milliseconds(), P50: pct(0.5), P95: pct(0.95), P99: pct(0.99), Max: d[len(d)-1].Milliseconds()}
}

func ms(v int64) string {
	if v >= 10_000 {
		return fmt.Sprintf("%.1fs", float64(v)/1000)
	}
	return fmt.Sprintf("%dms", v)
}
