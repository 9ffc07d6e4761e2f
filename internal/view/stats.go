package view

import (
	"context"
	"math"
	"sort"
	"time"

	"github.com/queuectl/queuectl/queue"
)

// Stats is the output of `queuectl stats --json` and GET /api/v1/stats.
type Stats struct {
	Window  string        `json:"window"`
	Total   *QueueStats   `json:"total"`
	Queues  []*QueueStats `json:"queues"`
	Slowest []SlowJob     `json:"slowest"`
}

// QueueStats summarizes finished attempts of one queue (or all: "*").
type QueueStats struct {
	Queue         string         `json:"queue"`
	Jobs          map[string]int `json:"jobs"`
	Attempts      int            `json:"attempts"`
	Failed        int            `json:"failed_attempts"`
	FailureRate   float64        `json:"failure_rate"`
	RunTimeMS     RunTimes       `json:"run_time_ms"`
	LastHour      int            `json:"completed_last_hour"`
	PerMinuteHour float64        `json:"throughput_per_minute_last_hour"`
	runs          queue.RunTimeHistogram
}

// RunTimes are attempt run time percentiles in milliseconds.
type RunTimes struct {
	Min int64 `json:"min"`
	P50 int64 `json:"p50"`
	P95 int64 `json:"p95"`
	P99 int64 `json:"p99"`
	Max int64 `json:"max"`
}

// SlowJob is one of the slowest attempts in the window.
type SlowJob struct {
	ID         string `json:"id"`
	Queue      string `json:"queue"`
	DurationMS int64  `json:"duration_ms"`
}

// slowest is how many of the slowest attempts stats lists.
const slowest = 5

// StatsInput is what NewStats computes statistics from.
type StatsInput struct {
	Counts []queue.Count
	// Runs is the run-time histogram of the window; LastHour that of its
	// last hour (or less, for a shorter window) from HourStart on.
	Runs, LastHour []queue.RunTimeCount
	HourStart      time.Time
	Slowest        []queue.AttemptStat
}

// LoadStats reads from st what `queuectl stats` and GET /api/v1/stats
// show for the window ending at now: figures the store keeps per minute
// and hour, so that the reads are bounded by the window's length, not by
// its attempts (see queue.RunTimeParams).
func LoadStats(ctx context.Context, st queue.Store, window time.Duration, now time.Time) (Stats, error) {
	in := StatsInput{}
	var err error
	if in.Counts, err = st.CountJobs(ctx); err != nil {
		return Stats{}, err
	}
	since := now.Add(-window)
	if in.Runs, err = st.RunTimes(ctx, queue.RunTimeParams{Since: since}); err != nil {
		return Stats{}, err
	}
	hour := queue.RunTimeParams{Since: latest(since, now.Add(-time.Hour))}
	in.HourStart = hour.Start()
	if in.LastHour, err = st.RunTimes(ctx, hour); err != nil {
		return Stats{}, err
	}
	if in.Slowest, err = st.SlowestAttempts(ctx, queue.SlowestParams{Since: since, Limit: slowest}); err != nil {
		return Stats{}, err
	}
	return NewStats(in, window, now), nil
}

func latest(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// NewStats computes the statistics of a window ending at now. Windows
// start at a whole minute (see queue.RunTimeParams); the throughput of the
// last hour is per minute of the span its count covers, an hour or up to
// a minute more.
func NewStats(in StatsInput, window time.Duration, now time.Time) Stats {
	all := &QueueStats{Queue: "*", Jobs: map[string]int{}}
	per := map[string]*QueueStats{}
	pick := func(q string) *QueueStats {
		if per[q] == nil {
			per[q] = &QueueStats{Queue: q, Jobs: map[string]int{}}
		}
		return per[q]
	}
	for _, c := range in.Counts {
		all.Jobs[string(c.State)] += c.N
		pick(c.Queue).Jobs[string(c.State)] += c.N
	}
	for _, c := range in.Runs {
		for _, s := range []*QueueStats{all, pick(c.Queue)} {
			s.Attempts += int(c.N)
			if c.Class == queue.OutcomeFailed {
				s.Failed += int(c.N)
			}
			s.runs.Add(c)
		}
	}
	for _, c := range in.LastHour {
		if c.Class == queue.OutcomeSucceeded {
			all.LastHour += int(c.N)
			pick(c.Queue).LastHour += int(c.N)
		}
	}
	slow := []SlowJob{}
	for _, a := range in.Slowest[:min(slowest, len(in.Slowest))] {
		slow = append(slow, SlowJob{a.JobID, a.Queue, a.Duration.Milliseconds()})
	}
	var queues []string
	for q := range per {
		queues = append(queues, q)
	}
	sort.Strings(queues)
	list := []*QueueStats{all}
	for _, q := range queues {
		list = append(list, per[q])
	}
	minutes := max(60, now.Sub(in.HourStart).Minutes())
	for _, s := range list {
		s.finish(minutes)
	}
	return Stats{Window: queue.FormatDuration(window), Total: all, Queues: list[1:], Slowest: slow}
}

// Timed reports whether any attempt in the window has a run time, so
// that RunTimeMS holds figures rather than zeros.
func (s *QueueStats) Timed() bool { return s.runs.Count() > 0 }

// Total is the number of jobs the statistics count.
func (s *QueueStats) Total() int {
	n := 0
	for _, c := range s.Jobs {
		n += c
	}
	return n
}

// finish computes the rates and run times; minutes is the span LastHour
// counts, at least an hour.
func (s *QueueStats) finish(minutes float64) {
	if s.Attempts > 0 {
		s.FailureRate = float64(s.Failed) / float64(s.Attempts)
	}
	s.PerMinuteHour = math.Round(float64(s.LastHour)/minutes*10) / 10
	h := &s.runs
	if h.Count() == 0 {
		return
	}
	s.RunTimeMS = RunTimes{Min: h.Min().Milliseconds(), P50: h.Quantile(0.5).Milliseconds(), P95: h.Quantile(0.95).Milliseconds(),
		P99: h.Quantile(0.99).Milliseconds(), Max: h.Max().Milliseconds()}
}
