package queue

import (
	"context"
	"crypto/rand"
	"encoding/base32"
	"encoding/binary"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"
)

// DefaultQueue is the queue of a job that names none.
const DefaultQueue = "default"

// NewJob is a job as a user submits it. Nil fields take the queue's, then
// the store's defaults at enqueue time.
type NewJob struct {
	ID          string // "" generates one
	Queue       string // "" is DefaultQueue
	Command     string
	Priority    int
	MaxRetries  *int
	Timeout     *time.Duration
	BackoffBase *float64
	MaxBackoff  *time.Duration
	RunAt       time.Time // zero: now
	Env         map[string]string
	Dir         string
	Template    string
	ScheduledAt time.Time
	Labels      map[string]string
	After       []string      // ids of the jobs it runs after
	UniqueKey   string        // see Job.UniqueKey
	UniqueFor   time.Duration // see Job.UniqueFor
	Hooks       Hooks         // set ones win over the queue's
}

// Overrides are optional per-queue (or per-template) retry settings.
type Overrides struct {
	MaxRetries  *int
	BackoffBase *float64
	MaxBackoff  *time.Duration
	Timeout     *time.Duration
	Hooks       Hooks // a job's own hooks win over these
}

// Apply returns s with the set overrides applied.
func (o Overrides) Apply(s Settings) Settings {
	if o.MaxRetries != nil {
		s.MaxRetries = *o.MaxRetries
	}
	if o.BackoffBase != nil {
		s.BackoffBase = *o.BackoffBase
	}
	if o.MaxBackoff != nil {
		s.MaxBackoff = *o.MaxBackoff
	}
	if o.Timeout != nil {
		s.Timeout = *o.Timeout
	}
	return s
}

// Resolve validates n and turns it into a pending job, taking unset fields
// from s (the store's defaults with the queue's overrides applied).
func (n NewJob) Resolve(s Settings, now time.Time) (*Job, error) {
	if strings.TrimSpace(n.Command) == "" {
		return nil, fmt.Errorf("%w: command is required", ErrInvalid)
	}
	if strings.ContainsRune(n.Command, 0) {
		return nil, fmt.Errorf("%w: command contains a NUL byte", ErrInvalid)
	}
	if !utf8.ValidString(n.Command) { // PostgreSQL cannot store it
		return nil, fmt.Errorf("%w: command is not valid UTF-8", ErrInvalid)
	}
	if len(n.Command) > MaxArgLen { // sh -c could not be started with it
		return nil, fmt.Errorf("%w: command is %d bytes, over the %d a process can be given", ErrInvalid, len(n.Command), MaxArgLen)
	}
	id := n.ID
	if id == "" {
		id = NewID()
	}
	if err := CheckName("id", id); err != nil {
		return nil, err
	}
	if id == "." || id == ".." { // escaped as usual, /api/v1/jobs/.. is /api/v1/
		return nil, fmt.Errorf("%w: id %q: in a URL's path it is a dot segment, which leads elsewhere", ErrInvalid, id)
	}
	q := n.Queue
	if q == "" {
		q = DefaultQueue
	}
	if err := CheckName("queue", q); err != nil {
		return nil, err
	}
	if n.Priority < -MaxPriorityLimit || n.Priority > MaxPriorityLimit {
		return nil, fmt.Errorf("%w: priority %d out of range -%d..%d", ErrInvalid, n.Priority, MaxPriorityLimit, MaxPriorityLimit)
	}
	s = Overrides{MaxRetries: n.MaxRetries, BackoffBase: n.BackoffBase, MaxBackoff: n.MaxBackoff, Timeout: n.Timeout}.Apply(s)
	if s.MaxRetries < 0 || s.MaxRetries > MaxRetriesLimit {
		return nil, fmt.Errorf("%w: max_retries %d out of range 0..%d", ErrInvalid, s.MaxRetries, MaxRetriesLimit)
	}
	if err := CheckTimeout(s.Timeout); err != nil {
		return nil, err
	}
	if s.BackoffBase < BackoffBaseMin || s.BackoffBase > BackoffBaseMax {
		return nil, fmt.Errorf("%w: backoff_base %g out of range %g..%g", ErrInvalid, s.BackoffBase, BackoffBaseMin, BackoffBaseMax)
	}
	if s.MaxBackoff < 0 || s.MaxBackoff > MaxBackoffLimit {
		return nil, fmt.Errorf("%w: max_backoff %s out of range 0..%s", ErrInvalid, FormatDuration(s.MaxBackoff), FormatDuration(MaxBackoffLimit))
	}
	if err := CheckEnv(n.Env); err != nil {
		return nil, err
	}
	if err := CheckDir(n.Dir); err != nil {
		return nil, err
	}
	if err := CheckRunAt(n.RunAt); err != nil {
		return nil, err
	}
	if err := n.checkShape(id); err != nil {
		return nil, err
	}
	// The stores keep microseconds: the job as returned is the job as read.
	now = now.UTC().Truncate(time.Microsecond)
	runAt := n.RunAt.UTC().Truncate(time.Microsecond)
	if runAt.IsZero() || runAt.Before(now) {
		runAt = now
	}
	return &Job{
		ID: id, Queue: q, Command: n.Command, State: StatePending, Priority: n.Priority,
		MaxRetries: s.MaxRetries, Timeout: s.Timeout, BackoffBase: s.BackoffBase, MaxBackoff: s.MaxBackoff,
		RunAt: runAt, CreatedAt: now, UpdatedAt: now, Env: n.Env, Dir: n.Dir,
		Template: n.Template, ScheduledAt: n.ScheduledAt.UTC(),
		Labels: n.Labels, After: n.After, UniqueKey: n.UniqueKey, UniqueFor: n.UniqueFor, Hooks: n.Hooks,
	}, nil
}

// checkShape validates the labels, dependencies and unique key of job id.
func (n NewJob) checkShape(id string) error {
	if err := CheckLabels(n.Labels); err != nil {
		return err
	}
	if len(n.After) > MaxAfter {
		return fmt.Errorf("%w: after: at most %d jobs", ErrInvalid, MaxAfter)
	}
	seen := make(map[string]bool, len(n.After))
	for _, dep := range n.After {
		if err := CheckName("after", dep); err != nil {
			return err
		}
		if dep == id {
			return fmt.Errorf("%w: after: job %q cannot run after itself", ErrInvalid, id)
		}
		if seen[dep] {
			return fmt.Errorf("%w: after: %q is named twice", ErrInvalid, dep)
		}
		seen[dep] = true
	}
	if n.UniqueKey != "" {
		if err := CheckName("unique_key", n.UniqueKey); err != nil {
			return err
		}
	}
	switch {
	case n.UniqueFor < 0 || n.UniqueFor > MaxUniqueFor:
		return fmt.Errorf("%w: unique_for %s out of range 0..%s", ErrInvalid, FormatDuration(n.UniqueFor), FormatDuration(MaxUniqueFor))
	case n.UniqueFor > 0 && n.UniqueKey == "":
		return fmt.Errorf("%w: unique_for needs a unique_key", ErrInvalid)
	}
	return nil
}

// NewID returns a unique job id that sorts by creation time.
func NewID() string {
	var b [16]byte
	binary.BigEndian.PutUint64(b[:8], uint64(time.Now().UnixNano()))
	_, _ = rand.Read(b[8:])
	return "j" + strings.ToLower(base32.HexEncoding.WithPadding(base32.NoPadding).EncodeToString(b[2:]))
}

// Enqueue resolves jobs against the store's defaults and the given per-queue
// overrides, then inserts them all in one durable transaction.
func Enqueue(ctx context.Context, st Store, queues map[string]Overrides, jobs []NewJob, now time.Time) ([]*Job, error) {
	r, err := NewResolver(ctx, st, queues, now)
	if err != nil {
		return nil, err
	}
	out := make([]*Job, 0, len(jobs))
	seen := make(map[string]int, len(jobs))
	for i, n := range jobs {
		j, err := r.Resolve(n)
		if err != nil {
			if len(jobs) > 1 {
				return nil, fmt.Errorf("job %d: %w", i+1, err)
			}
			return nil, err
		}
		if prev, ok := seen[j.ID]; ok {
			return nil, fmt.Errorf("%w: %q (jobs %d and %d)", ErrDuplicate, j.ID, prev+1, i+1)
		}
		seen[j.ID] = i
		out = append(out, j)
	}
	if err := st.InsertJobs(ctx, out); err != nil {
		// A job's error need not name an id the caller never saw.
		var je *JobError
		if len(jobs) == 1 && jobs[0].ID == "" && errors.As(err, &je) && je.ID == out[0].ID {
			return nil, je.Err
		}
		return nil, err
	}
	return out, nil
}

// QueueOverrides reads the per-queue settings a service's configuration
// file applied, for Enqueue.
func QueueOverrides(ctx context.Context, st Store) (map[string]Overrides, error) {
	qs, err := st.Queues(ctx)
	if err != nil {
		return nil, err
	}
	out := make(map[string]Overrides, len(qs))
	for _, q := range qs {
		out[q.Name] = q.Retry
	}
	return out, nil
}
