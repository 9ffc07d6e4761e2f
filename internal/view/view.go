// Package view owns the JSON shapes queuectl shows to people and programs:
// the CLI's --json output and the HTTP API serve the same structs, built by
// the same functions here, so a field never means two things. It also owns
// the job JSON that `queuectl enqueue` and POST /api/v1/jobs accept, with one
// parser and one set of error messages.
//
// It depends only on the queue and scheduler packages; it does no I/O.
package view

import (
	"sort"

	"github.com/queuectl/queuectl/queue"
)

// Status is the output of `queuectl status --json` and GET /api/v1/status:
// job counts by state (every state present) and by queue, and how many
// workers are registered.
type Status struct {
	Jobs    map[queue.State]int            `json:"jobs"`
	Queues  map[string]map[queue.State]int `json:"queues"`
	Workers int                            `json:"workers"`
	// Paused lists the paused queues (queue pause), by name.
	Paused []string `json:"paused_queues"`
}

// WithPaused returns s listing the paused queues of controls.
func (s Status) WithPaused(controls []queue.QueueControl) Status {
	s.Paused = []string{}
	for _, c := range controls {
		if c.Paused {
			s.Paused = append(s.Paused, c.Name)
		}
	}
	return s
}

// NewStatus sums counts into a Status.
func NewStatus(counts []queue.Count, workers int) Status {
	s := Status{Jobs: map[queue.State]int{}, Queues: map[string]map[queue.State]int{}, Workers: workers}
	for _, st := range queue.States() {
		s.Jobs[st] = 0
	}
	for _, c := range counts {
		s.Jobs[c.State] += c.N
		if s.Queues[c.Queue] == nil {
			s.Queues[c.Queue] = map[queue.State]int{}
		}
		s.Queues[c.Queue][c.State] += c.N
	}
	return s
}

// QueueNames returns the status's queues in name order.
func (s Status) QueueNames() []string {
	names := make([]string, 0, len(s.Queues))
	for q := range s.Queues {
		names = append(names, q)
	}
	sort.Strings(names)
	return names
}

// JobDetail is one job with its attempt history (`queuectl show --json`,
// GET /api/v1/jobs/{id}).
type JobDetail struct {
	queue.JobJSON
	// Env and Dir are shown by the HTTP API only: values in full to an
	// admin, as "(hidden)" to a viewer.
	Env     map[string]string `json:"env,omitempty"`
	Dir     string            `json:"dir,omitempty"`
	History []*queue.Attempt  `json:"history"`
}

// NewJobDetail builds the detail of j; hist may be nil.
func NewJobDetail(j *queue.Job, hist []*queue.Attempt) JobDetail {
	if hist == nil {
		hist = []*queue.Attempt{}
	}
	return JobDetail{JobJSON: j.JSON(), History: hist}
}

// Jobs returns jobs as a JSON array, never null.
func Jobs(jobs []*queue.Job) []*queue.Job {
	if jobs == nil {
		return []*queue.Job{}
	}
	return jobs
}

// Workers returns workers as a JSON array, never null.
func Workers(ws []*queue.WorkerInfo) []*queue.WorkerInfo {
	if ws == nil {
		return []*queue.WorkerInfo{}
	}
	return ws
}
