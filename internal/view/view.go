// Package view owns the JSON shapes queuectl shows to people and programs:
// the CLI's --json output and the HTTP API serve the same structs, built by
// the same functions here, so a field never means two things. It also owns
// the job JSON that `queuectl enqueue` and POST /api/v1/jobs accept, with one
// parser and one set of error messages.
//
// It depends only on the queue and scheduler packages; it does no I/O.
package view

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/queuectl/queuectl/queue"
)

// Scheduled is how a pending job whose run_at is still ahead is shown:
// not a stored state, but what people ask first about such a job.
const Scheduled queue.State = "scheduled"

// StatusStates are the columns of status: every state, with scheduled
// after pending.
func StatusStates() []queue.State {
	var out []queue.State
	for _, s := range queue.States() {
		out = append(out, s)
		if s == queue.StatePending {
			out = append(out, Scheduled)
		}
	}
	return out
}

// ShownState is the state a job is shown in at now: scheduled for a
// pending job due later, else its state.
func ShownState(j *queue.Job, now time.Time) queue.State {
	if j.State == queue.StatePending && j.RunAt.After(now) {
		return Scheduled
	}
	return j.State
}

// FilterState narrows p to the jobs shown in state name at now: a stored
// state, or scheduled (the pending jobs due later), as list and status
// show them. A pending filter keeps the scheduled jobs too: they are
// pending.
func FilterState(p *queue.ListParams, name string, now time.Time) error {
	if queue.State(name) == Scheduled {
		p.States, p.DueAfter = []queue.State{queue.StatePending}, now
		return nil
	}
	s, err := queue.ParseState(name)
	if err != nil {
		return fmt.Errorf("%w: unknown state %q (valid: %s)", queue.ErrInvalid, name, strings.Join(FilterStateNames(), ", "))
	}
	p.States = []queue.State{s}
	return nil
}

// FilterStateNames are the names FilterState takes, in life-cycle order.
func FilterStateNames() []string {
	var names []string
	for _, st := range StatusStates() {
		names = append(names, string(st))
	}
	return names
}

// Status is the output of `queuectl status --json` and GET /api/v1/status:
// job counts by state (every state of StatusStates present: pending counts
// the jobs due, scheduled those due later) and by queue, and how many
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

// NewStatus sums counts into a Status, moving the scheduled ones (as
// CountScheduled returns them) from pending to scheduled.
func NewStatus(counts []queue.Count, scheduled map[string]int, workers int) Status {
	s := Status{Jobs: map[queue.State]int{}, Queues: map[string]map[queue.State]int{}, Workers: workers}
	for _, st := range StatusStates() {
		s.Jobs[st] = 0
	}
	add := func(q string, st queue.State, n int) {
		s.Jobs[st] += n
		if s.Queues[q] == nil {
			s.Queues[q] = map[queue.State]int{}
		}
		s.Queues[q][st] += n
	}
	for _, c := range counts {
		add(c.Queue, c.State, c.N)
	}
	for q, n := range scheduled {
		// Read a moment apart from counts: never show fewer than none.
		n = min(n, s.Queues[q][queue.StatePending])
		add(q, queue.StatePending, -n)
		add(q, Scheduled, n)
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
	// Env is shown by the HTTP API only: values in full to an admin, as
	// "(hidden)" to a viewer.
	Env     map[string]string `json:"env,omitempty"`
	Dir     string            `json:"dir,omitempty"`
	History []*queue.Attempt  `json:"history"`
}

// NewJobDetail builds the detail of j; hist may be nil.
func NewJobDetail(j *queue.Job, hist []*queue.Attempt) JobDetail {
	if hist == nil {
		hist = []*queue.Attempt{}
	}
	return JobDetail{JobJSON: j.JSON(), Dir: j.Dir, History: hist}
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

// FormatLabels renders labels as "k1=v1, k2=v2" in key order.
func FormatLabels(labels map[string]string) string {
	parts := make([]string, 0, len(labels))
	for _, k := range slices.Sorted(maps.Keys(labels)) {
		parts = append(parts, k+"="+labels[k])
	}
	return strings.Join(parts, ", ")
}

// WorkerAlive is how recent a heartbeat must be for a worker to count as
// alive: a live worker, whatever its lease, renews it three times over.
const WorkerAlive = queue.SilentAfter

// Heard reports whether w's last heartbeat is under WorkerAlive old.
func Heard(w *queue.WorkerInfo, now time.Time) bool { return now.Sub(w.HeartbeatAt) < WorkerAlive }
