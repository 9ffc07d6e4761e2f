package view

import (
	"context"
	"slices"
	"strings"
	"time"

	"github.com/queuectl/queuectl/queue"
)

// Queue is one queue as GET /api/v1/queues shows it: the jobs it holds,
// its backlog, how long its oldest due job has waited, and who serves it.
type Queue struct {
	Name string `json:"name"`
	// Declared: a service's configuration file declares the queue;
	// Concurrency is then its slot count per service (0 otherwise).
	Declared    bool                `json:"declared"`
	Concurrency int                 `json:"concurrency"`
	Jobs        map[queue.State]int `json:"jobs"`
	// Backlog is the jobs waiting to run: pending (due; scheduled ones
	// are counted apart), and failed ones waiting for their retry.
	Backlog int `json:"backlog"`
	// OldestPendingAgeSeconds is how long the oldest due pending job has
	// waited (null when none is due).
	OldestPendingAgeSeconds *float64 `json:"oldest_pending_age_seconds"`
	// Workers serving the queue (named, or serving every queue).
	Workers int `json:"workers"`
	// Paused: claims everywhere leave the queue alone (queue pause).
	Paused bool `json:"paused"`
	// MaxRunning bounds its jobs running at once everywhere (0: none).
	MaxRunning int `json:"max_running"`
	// RateLimit bounds its starts per period, as "10/s" (null: none).
	RateLimit *string `json:"rate_limit"`
	// Scheduled is its pending jobs whose run_at is still ahead.
	Scheduled int `json:"scheduled"`
}

// Steer adds the queues' controls and scheduled counts to qs, which
// NewQueues made from the same controls (so it lists every queue they name).
func Steer(qs []Queue, controls []queue.QueueControl, scheduled map[string]int) []Queue {
	byName := map[string]int{}
	for i, q := range qs {
		byName[q.Name] = i
	}
	for _, c := range controls {
		i, ok := byName[c.Name]
		if !ok {
			continue
		}
		qs[i].Paused, qs[i].MaxRunning = c.Paused, c.MaxRunning
		if r := c.Rate.String(); r != "" {
			qs[i].RateLimit = &r
		}
	}
	for i := range qs {
		qs[i].Scheduled = scheduled[qs[i].Name]
	}
	slices.SortFunc(qs, func(a, b Queue) int { return strings.Compare(a.Name, b.Name) })
	return qs
}

// NewQueues lists every queue that holds jobs, is declared or is named in
// known (those with a control), by name.
func NewQueues(status Status, declared []queue.QueueConfig, known []string, oldest map[string]time.Time,
	workers []*queue.WorkerInfo, now time.Time) []Queue {
	byName := map[string]*Queue{}
	pick := func(name string) *Queue {
		if byName[name] == nil {
			byName[name] = &Queue{Name: name, Jobs: map[queue.State]int{}}
			for _, s := range StatusStates() {
				byName[name].Jobs[s] = 0
			}
		}
		return byName[name]
	}
	for name, counts := range status.Queues {
		q := pick(name)
		for s, n := range counts {
			q.Jobs[s] = n
		}
		q.Backlog = counts[queue.StatePending] + counts[queue.StateFailed]
	}
	for _, d := range declared {
		q := pick(d.Name)
		q.Declared, q.Concurrency = true, d.Concurrency
	}
	for _, name := range known { // perhaps without jobs
		pick(name)
	}
	for name, at := range oldest {
		age := max(0, now.Sub(at).Seconds())
		pick(name).OldestPendingAgeSeconds = &age
	}
	out := make([]Queue, 0, len(byName))
	for _, q := range byName {
		for _, w := range workers {
			if len(w.Queues) == 0 || slices.Contains(w.Queues, q.Name) {
				q.Workers++
			}
		}
		out = append(out, *q)
	}
	slices.SortFunc(out, func(a, b Queue) int {
		switch {
		case a.Name < b.Name:
			return -1
		case a.Name > b.Name:
			return 1
		}
		return 0
	})
	return out
}

// LoadQueues reads from st what `queue list` and GET /api/v1/queues show,
// and the queues named in also, which an action names, even when they
// hold no job and have no control (the action lifted the last one).
func LoadQueues(ctx context.Context, st queue.Store, now time.Time, also ...string) ([]Queue, error) {
	counts, err := st.CountJobs(ctx)
	if err != nil {
		return nil, err
	}
	ws, err := st.ListWorkers(ctx)
	if err != nil {
		return nil, err
	}
	declared, err := st.Queues(ctx)
	if err != nil {
		return nil, err
	}
	m, err := st.Metrics(ctx, now)
	if err != nil {
		return nil, err
	}
	controls, err := st.QueueControls(ctx)
	if err != nil {
		return nil, err
	}
	scheduled, err := st.CountScheduled(ctx, now)
	if err != nil {
		return nil, err
	}
	known := slices.Clone(also)
	for _, c := range controls {
		known = append(known, c.Name)
	}
	qs := NewQueues(NewStatus(counts, scheduled, len(ws)), declared, known, m.OldestPending, ws, now)
	return Steer(qs, controls, scheduled), nil
}
