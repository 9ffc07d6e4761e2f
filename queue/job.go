// Package queue owns queuectl's domain: the job model and its state machine,
// the Store interface every database implements, the retry policy, job
// defaults, and the Engine that claims, runs, retries and dead-letters jobs.
//
// It imports no database driver, no CLI and no configuration format: stores
// live in queue/sqlite and queue/postgres, the shell executor is reached
// through the Runner interface declared here, and the host's processes
// through the Processes interface (implemented by internal/proc).
//
// Guarantee: execution is at-least-once. A job that Enqueue acknowledged is
// durable; a job may run again after a crash, a lost lease or a power loss,
// but never on two workers at once while both hold valid leases.
package queue

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
)

// State is where a job is in its life cycle. See docs/states.md.
type State string

// The job states.
const (
	StateWaiting    State = "waiting"    // waiting for the jobs it runs after to complete
	StatePending    State = "pending"    // waiting for a worker; may have a future run_at
	StateProcessing State = "processing" // claimed by a worker that holds a lease
	StateCompleted  State = "completed"  // finished with exit code 0
	StateFailed     State = "failed"     // an attempt failed; waits for run_at to retry
	StateDead       State = "dead"       // retries exhausted: the dead-letter queue
	StateCancelled  State = "cancelled"  // stopped by a user
)

// AllStates lists every state in life-cycle order.
var allStates = []State{StateWaiting, StatePending, StateProcessing, StateCompleted, StateFailed, StateDead, StateCancelled}

// States returns every state in life-cycle order.
func States() []State { return append([]State(nil), allStates...) }

// ParseState returns the State named s or an ErrInvalid naming the valid ones.
func ParseState(s string) (State, error) {
	for _, st := range allStates {
		if string(st) == s {
			return st, nil
		}
	}
	if s == "scheduled" { // how list and status show a pending job due later
		return "", fmt.Errorf("%w: scheduled is not a stored state: a scheduled job is pending with a later run_at; use pending", ErrInvalid)
	}
	names := make([]string, len(allStates))
	for i, st := range allStates {
		names[i] = string(st)
	}
	return "", fmt.Errorf("%w: unknown state %q (valid: %s)", ErrInvalid, s, strings.Join(names, ", "))
}

// Outcome is how one attempt ended.
type Outcome string

// Attempt outcomes.
const (
	OutcomeSucceeded   Outcome = "succeeded"
	OutcomeFailed      Outcome = "failed"
	OutcomeTimedOut    Outcome = "timed_out"
	OutcomeLost        Outcome = "lost"        // the worker died or lost its lease
	OutcomeCancelled   Outcome = "cancelled"   // a user cancelled the running job
	OutcomeInterrupted Outcome = "interrupted" // shutdown stopped it; the attempt is not charged
)

// Sentinel errors. Stores map driver errors onto these; callers use errors.Is.
var (
	ErrNotFound    = errors.New("not found")
	ErrDuplicate   = errors.New("duplicate id")
	ErrInvalid     = errors.New("invalid")
	ErrConflict    = errors.New("not allowed in this state")
	ErrLeaseLost   = errors.New("lease lost")
	ErrSchemaNewer = errors.New("database schema is newer than this binary")
	// ErrReadOnly: the store was opened on a database it cannot write
	// (a read-only file or directory); every write fails with it.
	ErrReadOnly = errors.New("database is read-only")
	// ErrUnavailable: the database cannot take a change for now (it
	// stayed locked by another process, its disk is full); nothing was
	// changed, and the same request may succeed later.
	ErrUnavailable = errors.New("database unavailable")
	// ErrRolledBack: the database rolled the call's transaction back
	// because it conflicted with another (a deadlock, a serialization
	// failure on PostgreSQL). Such an error is also ErrUnavailable:
	// nothing was changed, and the same call made again is expected to
	// succeed once the other transaction has ended.
	ErrRolledBack = errors.New("rolled back after a conflict with another transaction")
	// ErrPublishing: an import committed (its jobs are stored) but making
	// them visible stopped part-way; the store finishes it later (the next
	// process to open the database, a running worker). Not to be imported
	// again.
	ErrPublishing = errors.New("the import is stored; making its jobs visible stopped and is finished later")
)

// JobError is an error about one job of those a call stores, naming it.
type JobError struct {
	ID  string
	Err error
}

func (e *JobError) Error() string { return fmt.Sprintf("job %q: %v", e.ID, e.Err) }
func (e *JobError) Unwrap() error { return e.Err }

// Job is one unit of work: a shell command with its retry policy and state.
// All times are UTC.
type Job struct {
	ID              string
	Queue           string
	Command         string
	State           State
	Priority        int
	Attempts        int // attempts started so far: the number of the latest
	Uncharged       int // attempts not charged against MaxRetries (interrupted by a shutdown)
	MaxRetries      int // retries after the first attempt: 3 means at most 4 attempts
	Timeout         time.Duration
	BackoffBase     float64
	MaxBackoff      time.Duration
	RunAt           time.Time // earliest time the job may (next) run
	CreatedAt       time.Time
	UpdatedAt       time.Time
	StartedAt       time.Time // start of the latest attempt; zero if never started
	FinishedAt      time.Time // end of the latest attempt; zero if none ended
	ExitCode        *int      // of the latest attempt that exited
	Error           string    // last failure reason
	Worker          string    // worker holding or last holding the job
	LeaseUntil      time.Time // while processing: the lease expiry
	Env             map[string]string
	Dir             string
	Template        string    // cron template that fired the job, "" if ad hoc
	ScheduledAt     time.Time // cron slot, zero if ad hoc
	CancelRequested bool
	Labels          map[string]string
	// After lists the jobs this one runs after (enqueue --after): it waits
	// until all of them completed. Kept once the job is released.
	After []string
	// UniqueKey, when set, keeps a second job with the same key out while
	// this one is not final; UniqueFor extends that to the given time
	// after a job with the key finished (it applies at enqueue only).
	UniqueKey string
	UniqueFor time.Duration
	Hooks     Hooks // copied from the template, queue or defaults at enqueue
	// ExistingID is set by InsertJobs when a job with the same unique key
	// already covered this one: nothing was inserted, and ExistingID names
	// that job.
	ExistingID string
}

// MaxAttempts is the total number of attempts the job may make: the
// uncharged ones come on top of MaxRetries+1.
func (j *Job) MaxAttempts() int { return j.MaxRetries + 1 + j.Uncharged }

// JobJSON is the stable JSON form of a job (see docs/cli.md).
type JobJSON struct {
	ID         string     `json:"id"`
	Queue      string     `json:"queue"`
	Command    string     `json:"command"`
	State      State      `json:"state"`
	Priority   int        `json:"priority"`
	Attempts   int        `json:"attempts"`
	MaxRetries int        `json:"max_retries"`
	Timeout    *float64   `json:"timeout"` // seconds, null when none
	RunAt      time.Time  `json:"run_at"`
	CreatedAt  time.Time  `json:"created_at"`
	UpdatedAt  time.Time  `json:"updated_at"`
	StartedAt  *time.Time `json:"started_at"`
	FinishedAt *time.Time `json:"finished_at"`
	ExitCode   *int       `json:"exit_code"`
	Error      *string    `json:"error"`
	Worker     *string    `json:"worker"`
	Template   string     `json:"template,omitempty"`
	// ScheduledAt is the cron slot a template fired the job for; null for
	// an ad-hoc job.
	ScheduledAt *time.Time        `json:"scheduled_at"`
	Labels      map[string]string `json:"labels,omitempty"`
	After       []string          `json:"after,omitempty"`
	UniqueKey   string            `json:"unique_key,omitempty"`
}

// MarshalJSON renders the stable JSON form: RFC 3339 UTC times, timeout in
// seconds, null for absent values.
func (j *Job) MarshalJSON() ([]byte, error) {
	return json.Marshal(j.JSON())
}

// JSON returns the stable JSON form of the job.
func (j *Job) JSON() JobJSON {
	out := JobJSON{
		ID: j.ID, Queue: j.Queue, Command: j.Command, State: j.State, Priority: j.Priority,
		Attempts: j.Attempts, MaxRetries: j.MaxRetries, RunAt: j.RunAt.UTC(),
		CreatedAt: j.CreatedAt.UTC(), UpdatedAt: j.UpdatedAt.UTC(), StartedAt: optTime(j.StartedAt),
		FinishedAt: optTime(j.FinishedAt), ExitCode: j.ExitCode, Error: optString(j.Error),
		Worker: optString(j.Worker), Template: j.Template, ScheduledAt: optTime(j.ScheduledAt),
		Labels: j.Labels, After: j.After, UniqueKey: j.UniqueKey,
	}
	if j.Timeout > 0 {
		s := j.Timeout.Seconds()
		out.Timeout = &s
	}
	return out
}

func optTime(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	u := t.UTC()
	return &u
}

func optString(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// Attempt is the history record of one attempt of a job.
type Attempt struct {
	JobID      string
	Number     int
	StartedAt  time.Time
	FinishedAt time.Time
	ExitCode   *int
	Signal     string
	Outcome    Outcome
	Worker     string
	Error      string
	Output     []byte // captured output (possibly capped); not part of JSON
	Dropped    int64  // output bytes dropped by the cap
}

// Duration is how long the attempt ran.
func (a *Attempt) Duration() time.Duration { return a.FinishedAt.Sub(a.StartedAt) }

// MarshalJSON renders the stable JSON form of one history entry.
func (a *Attempt) MarshalJSON() ([]byte, error) {
	return json.Marshal(struct {
		Attempt    int       `json:"attempt"`
		StartedAt  time.Time `json:"started_at"`
		FinishedAt time.Time `json:"finished_at"`
		DurationMS int64     `json:"duration_ms"`
		ExitCode   *int      `json:"exit_code"`
		Signal     *string   `json:"signal"`
		Outcome    Outcome   `json:"outcome"`
		Worker     string    `json:"worker"`
		Error      *string   `json:"error"`
		Dropped    int64     `json:"output_dropped_bytes"`
	}{a.Number, a.StartedAt.UTC(), a.FinishedAt.UTC(), a.Duration().Milliseconds(), a.ExitCode,
		optString(a.Signal), a.Outcome, a.Worker, optString(a.Error), a.Dropped})
}

// WorkerInfo is a registered worker process.
type WorkerInfo struct {
	ID        string
	PID       int
	Host      string
	BootID    string // identifies the host's boot; a different boot means the worker is gone
	ProcStart uint64 // start-time token of the process (PID reuse guard)
	Queues    []string
	// Service marks a `queuectl run` service, which `worker stop` leaves
	// alone: it is stopped as a service is (its own signal, its manager).
	Service       bool
	StartedAt     time.Time
	HeartbeatAt   time.Time
	StopRequested bool
	CurrentJobs   []string // jobs it holds now
}

// Kind is how a registered worker is shown: "service" for a `queuectl run`
// service, else "worker".
func (w *WorkerInfo) Kind() string {
	if w.Service {
		return "service"
	}
	return "worker"
}

// MarshalJSON renders the stable JSON form of a worker.
func (w *WorkerInfo) MarshalJSON() ([]byte, error) {
	cur, queues := w.CurrentJobs, w.Queues
	if cur == nil {
		cur = []string{}
	}
	if queues == nil {
		queues = []string{} // every queue
	}
	return json.Marshal(struct {
		ID          string    `json:"id"`
		PID         int       `json:"pid"`
		Host        string    `json:"host"`
		Kind        string    `json:"kind"`
		Queues      []string  `json:"queues"`
		StartedAt   time.Time `json:"started_at"`
		HeartbeatAt time.Time `json:"heartbeat_at"`
		CurrentJobs []string  `json:"current_jobs"`
	}{w.ID, w.PID, w.Host, w.Kind(), queues, w.StartedAt.UTC(), w.HeartbeatAt.UTC(), cur})
}

// Hooks are shell commands run after an outcome is recorded: OnSuccess
// when the job completed, OnFailure after each failed attempt, OnDead when
// it ended dead. "" runs nothing. Timeout bounds each (0: HookTimeout); it
// is stored in nanoseconds.
type Hooks struct {
	OnSuccess string        `json:"on_success,omitempty"`
	OnFailure string        `json:"on_failure,omitempty"`
	OnDead    string        `json:"on_dead,omitempty"`
	Timeout   time.Duration `json:"timeout,omitempty"`
}

// Or fills the hooks h leaves unset from fallback: the most specific
// declaration of each hook wins.
func (h Hooks) Or(fallback Hooks) Hooks {
	if h.OnSuccess == "" {
		h.OnSuccess = fallback.OnSuccess
	}
	if h.OnFailure == "" {
		h.OnFailure = fallback.OnFailure
	}
	if h.OnDead == "" {
		h.OnDead = fallback.OnDead
	}
	if h.Timeout == 0 {
		h.Timeout = fallback.Timeout
	}
	return h
}

// IsZero reports whether no hook is set (a timeout alone runs nothing).
func (h Hooks) IsZero() bool { return h.OnSuccess == "" && h.OnFailure == "" && h.OnDead == "" }

// RunTimeout is how long each hook may run: Timeout, else HookTimeout.
func (h Hooks) RunTimeout() time.Duration {
	if h.Timeout > 0 {
		return h.Timeout
	}
	return HookTimeout
}
