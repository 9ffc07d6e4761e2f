package view

import (
	"slices"
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
	// Backlog is the jobs waiting to run: pending, and failed ones waiting
	// for their retry.
	Backlog int `json:"backlog"`
	// OldestPendingAgeSeconds is how long the oldest due pending job has
	// waited (null when none is due).
	OldestPendingAgeSeconds *float64 `json:"oldest_pending_age_seconds"`
	// Workers serving the queue (named, or serving every queue).
	Workers int `json:"workers"`
}

// NewQueues lists every queue that holds jobs or is declared, by name.
func NewQueues(status Status, declared []queue.QueueConfig, oldest map[string]time.Time,
	workers []*queue.WorkerInfo, now time.Time) []Queue {
	byName := map[string]*Queue{}
	pick := func(name string) *Queue {
		if byName[name] == nil {
			byName[name] = &Queue{Name: name, Jobs: map[queue.State]int{}}
			for _, s := range queue.States() {
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
