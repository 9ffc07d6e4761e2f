package view

import (
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
	durations     []time.Duration
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

// NewStats computes the statistics of a window ending at now from the job
// counts and the attempts finished in the window.
func NewStats(counts []queue.Count, attempts []queue.AttemptStat, window time.Duration, now time.Time) Stats {
	all := &QueueStats{Queue: "*", Jobs: map[string]int{}}
	per := map[string]*QueueStats{}
	pick := func(q string) *QueueStats {
		if per[q] == nil {
			per[q] = &QueueStats{Queue: q, Jobs: map[string]int{}}
		}
		return per[q]
	}
	for _, c := range counts {
		all.Jobs[string(c.State)] += c.N
		pick(c.Queue).Jobs[string(c.State)] += c.N
	}
	slow := []SlowJob{}
	for _, at := range attempts {
		for _, s := range []*QueueStats{all, pick(at.Queue)} {
			s.Attempts++
			if at.Outcome != queue.OutcomeSucceeded && at.Outcome != queue.OutcomeInterrupted {
				s.Failed++
			}
			s.durations = append(s.durations, at.Duration)
			if at.Outcome == queue.OutcomeSucceeded && now.Sub(at.FinishedAt) <= time.Hour {
				s.LastHour++
			}
		}
		slow = append(slow, SlowJob{at.JobID, at.Queue, at.Duration.Milliseconds()})
	}
	sort.Slice(slow, func(i, j int) bool { return slow[i].DurationMS > slow[j].DurationMS })
	slow = slow[:min(5, len(slow))]
	var queues []string
	for q := range per {
		queues = append(queues, q)
	}
	sort.Strings(queues)
	list := []*QueueStats{all}
	for _, q := range queues {
		list = append(list, per[q])
	}
	for _, s := range list {
		s.finish()
	}
	return Stats{Window: queue.FormatDuration(window), Total: all, Queues: list[1:], Slowest: slow}
}

// Total is the number of jobs the statistics count.
func (s *QueueStats) Total() int {
	n := 0
	for _, c := range s.Jobs {
		n += c
	}
	return n
}

func (s *QueueStats) finish() {
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
	s.RunTimeMS = RunTimes{Min: d[0].Milliseconds(), P50: pct(0.5), P95: pct(0.95), P99: pct(0.99), Max: d[len(d)-1].Milliseconds()}
}
