package queue

import (
	"encoding/json"
	"fmt"
	"slices"
	"time"
)

// Overlap policies of a recurring job: what happens when a slot comes while
// the template's previous run is still pending, running or waiting to retry.
const (
	OverlapSkip  = "skip"  // do not fire that slot
	OverlapQueue = "queue" // fire it once the previous run has ended; only the newest such run waits
	OverlapAllow = "allow" // fire it anyway
)

// Catch-up policies for slots missed while no scheduler was running.
const (
	CatchUpNone   = "none"   // fire none of them
	CatchUpLatest = "latest" // fire the most recent one
	CatchUpAll    = "all"    // fire each, up to MaxCatchUp (the most recent ones)
)

// Template is a recurring job as applied to the store from a configuration
// file, with the schedule state the store keeps for it.
type Template struct {
	Name       string
	Queue      string
	Schedule   string // cron spec as written
	TimeZone   string // IANA name
	Command    string
	Dir        string
	Env        map[string]string
	Overlap    string
	CatchUp    string
	MaxCatchUp int
	Jitter     time.Duration
	Priority   int
	Enabled    bool
	Retry      Overrides // with the hooks its jobs get (job, queue, defaults block)
	// Unique skips a fire while a job of the template is pending (it
	// composes with Overlap).
	Unique bool

	// State kept by the store.
	Cursor         time.Time // the last slot handled (fired, skipped or caught up)
	PendingTrigger time.Time // slot of the run waiting for the previous one (overlap = queue)
	PendingKind    FireKind  // whether that waiting run is a cron slot or a manual trigger
	UpdatedAt      time.Time
	LastJob        *Job // the newest job the template fired, nil if none
	LastFinished   *Job // the newest of its jobs that finished (completed, dead or cancelled), nil if none
}

// TemplateJSON is the stable JSON form of a template (see docs/cli.md).
type TemplateJSON struct {
	Name     string     `json:"name"`
	Queue    string     `json:"queue"`
	Schedule string     `json:"schedule"`
	TimeZone string     `json:"time_zone"`
	Command  string     `json:"command"`
	Overlap  string     `json:"overlap"`
	CatchUp  string     `json:"catch_up"`
	Enabled  bool       `json:"enabled"`
	Cursor   *time.Time `json:"cursor"`
	LastJob  *JobJSON   `json:"last_job"`
	// LastFinished is the newest job that finished: its state is the
	// outcome of the last run, while last_job may still be running.
	LastFinished *JobJSON `json:"last_finished"`
}

// JSON returns the stable JSON form of the template.
func (t *Template) JSON() TemplateJSON {
	return TemplateJSON{t.Name, t.Queue, t.Schedule, t.TimeZone, t.Command, t.Overlap, t.CatchUp, t.Enabled, optTime(t.Cursor),
		optJob(t.LastJob), optJob(t.LastFinished)}
}

func optJob(j *Job) *JobJSON {
	if j == nil {
		return nil
	}
	v := j.JSON()
	return &v
}

// MarshalJSON renders the stable JSON form of a template.
func (t *Template) MarshalJSON() ([]byte, error) {
	return json.Marshal(t.JSON())
}

// FireKind tells a cron slot from a manual trigger.
type FireKind string

// Kinds of fires.
const (
	FireCron   FireKind = "cron"
	FireManual FireKind = "manual"
)

// FireParams asks the store to fire one slot of a template.
type FireParams struct {
	Template string
	Kind     FireKind
	Slot     time.Time // the cron slot, or the trigger time
	Job      *Job      // the resolved job to insert; nil only moves the cursor (a slot catch-up passes over)
	Overlap  string
	Unique   bool // skip the fire while a job of the template is pending
	// Cursor is where the template's cursor moves when the slot is handled
	// (fired, or skipped under overlap = skip). Only cron fires move it, and
	// never backwards.
	Cursor time.Time
	Now    time.Time
}

// FireResult says what the store did with a fire.
type FireResult struct {
	Fired   bool   // a job was inserted
	JobID   string // the job of this slot (new, or already there from another scheduler)
	Blocked bool   // the previous run was still active
	Skipped bool   // blocked under overlap = skip, or under unique (Pending): the slot will not fire
	Pending bool   // skipped under unique = true: a run of the template is still pending
	Queued  bool   // blocked under overlap = queue: it waits (replacing an older waiting run) and fires when the previous run ends
}

// Why says why a fire inserted no job ("" when it did), for a template
// with the given overlap policy.
func (r FireResult) Why(overlap string) string {
	switch {
	case r.Fired:
		return ""
	case r.Pending:
		return "a run of it is still pending and unique = true"
	case r.Queued:
		return "its previous run is still active (overlap = queue); this run starts when it ends"
	case r.Skipped:
		return "its previous run is still active and overlap = " + overlap
	}
	return "this slot was fired already, by another scheduler"
}

// QueueConfig is a queue declared in a configuration file.
type QueueConfig struct {
	Name        string
	Concurrency int
	Retry       Overrides // with the queue block's hooks, the defaults block's filling the gaps
}

// ConfigApply is what a service's configuration file sets in a store
// (Store.ApplyConfig): its queues, the limits of the queues it declares,
// and its recurring jobs.
type ConfigApply struct {
	Queues []QueueConfig
	// Limits are updates of queues' controls, as UpdateQueueControls
	// takes: a service's file sets its declared queues' max running and
	// rate and leaves a pause as stored; migrate --to copies pauses too.
	Limits    []ControlUpdate
	Templates []*Template
	Now       time.Time // a new template's cursor
}

// Check validates the limits and the templates' definitions, which a
// store checks before it changes anything.
func (c ConfigApply) Check() error {
	for _, u := range c.Limits {
		if err := u.Check(); err != nil {
			return err
		}
	}
	for _, t := range c.Templates {
		if _, err := t.Definition(); err != nil {
			return fmt.Errorf("%s: %w", t.Name, err)
		}
	}
	return nil
}

// LimitedNames returns the names of the queues c.Limits updates, sorted
// and without repeats: the order stores lock their control rows in.
func (c ConfigApply) LimitedNames() []string {
	var names []string
	for _, u := range c.Limits {
		names = append(names, u.Names...)
	}
	slices.Sort(names)
	return slices.Compact(names)
}

// templateDef is the stored form of a template's definition.
type templateDef struct {
	Queue        string            `json:"queue"`
	Schedule     string            `json:"schedule"`
	TimeZone     string            `json:"time_zone"`
	Command      string            `json:"command"`
	Dir          string            `json:"dir,omitempty"`
	Env          map[string]string `json:"env,omitempty"`
	Overlap      string            `json:"overlap"`
	CatchUp      string            `json:"catch_up"`
	MaxCatchUp   int               `json:"max_catch_up"`
	JitterNS     int64             `json:"jitter_ns"`
	Priority     int               `json:"priority"`
	Enabled      bool              `json:"enabled"`
	MaxRetries   *int              `json:"max_retries,omitempty"`
	BackoffBase  *float64          `json:"backoff_base,omitempty"`
	MaxBackoffNS *int64            `json:"max_backoff_ns,omitempty"`
	TimeoutNS    *int64            `json:"timeout_ns,omitempty"`
	Hooks        *Hooks            `json:"hooks,omitempty"`
	Unique       bool              `json:"unique,omitempty"`
}

// Definition encodes what a configuration file says of the template, for
// stores to keep in one column.
func (t *Template) Definition() ([]byte, error) {
	d := templateDef{
		Queue: t.Queue, Schedule: t.Schedule, TimeZone: t.TimeZone, Command: t.Command, Dir: t.Dir, Env: t.Env,
		Overlap: t.Overlap, CatchUp: t.CatchUp, MaxCatchUp: t.MaxCatchUp, JitterNS: int64(t.Jitter),
		Priority: t.Priority, Enabled: t.Enabled, MaxRetries: t.Retry.MaxRetries, BackoffBase: t.Retry.BackoffBase,
		Unique: t.Unique,
	}
	if !t.Retry.Hooks.IsZero() {
		d.Hooks = &t.Retry.Hooks
	}
	if t.Retry.MaxBackoff != nil {
		v := int64(*t.Retry.MaxBackoff)
		d.MaxBackoffNS = &v
	}
	if t.Retry.Timeout != nil {
		v := int64(*t.Retry.Timeout)
		d.TimeoutNS = &v
	}
	return json.Marshal(d)
}

// TemplateFromDefinition decodes what Definition encoded.
func TemplateFromDefinition(name string, b []byte) (*Template, error) {
	var d templateDef
	if err := json.Unmarshal(b, &d); err != nil {
		return nil, err
	}
	t := &Template{
		Name: name, Queue: d.Queue, Schedule: d.Schedule, TimeZone: d.TimeZone, Command: d.Command, Dir: d.Dir,
		Env: d.Env, Overlap: d.Overlap, CatchUp: d.CatchUp, MaxCatchUp: d.MaxCatchUp, Jitter: time.Duration(d.JitterNS),
		Priority: d.Priority, Enabled: d.Enabled, Unique: d.Unique,
		Retry: Overrides{MaxRetries: d.MaxRetries, BackoffBase: d.BackoffBase},
	}
	if d.Hooks != nil {
		t.Retry.Hooks = *d.Hooks
	}
	if d.MaxBackoffNS != nil {
		v := time.Duration(*d.MaxBackoffNS)
		t.Retry.MaxBackoff = &v
	}
	if d.TimeoutNS != nil {
		v := time.Duration(*d.TimeoutNS)
		t.Retry.Timeout = &v
	}
	return t, nil
}

// FireKey is the unique key of one fire of a template: at most one job
// exists per key, however many schedulers try.
func FireKey(template string, kind FireKind, slot time.Time) string {
	if kind == FireManual {
		return template + "@manual@" + slot.UTC().Format(time.RFC3339Nano)
	}
	return template + "@" + slot.UTC().Format(time.RFC3339)
}
