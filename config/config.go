// Package config loads queuectl's configuration file: an HCL file that
// declares the database, retry defaults, queues and recurring (cron) jobs.
//
// It owns the file format (see docs/config.md) and turns a file into
// validated plain Go values plus hcl diagnostics: variables and their
// overrides, locals, the allowed functions, the defaults for every optional
// setting, and all semantic checks (durations, time zones, cron specs via
// package cronspec, queue references, duplicates). It knows nothing about the
// database or about running jobs.
//
// All problems in a file are reported together: decoding continues past
// semantic errors, so one call returns every error, each as an
// *hcl.Diagnostic whose Subject points at the offending source range. Render
// them with WriteDiagnostics.
package config

import (
	"fmt"
	"os"
	"time"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"

	"github.com/queuectl/queuectl/scheduler/cronspec"
)

// DefaultQueue is the queue jobs use when they name none. It always exists:
// when the file has no queue "default" block, File.Queues ends with an
// implicit one with concurrency 1.
const DefaultQueue = "default"

// Defaults of optional job settings.
const (
	DefaultTimeZone   = "UTC"
	DefaultOverlap    = "skip"
	DefaultCatchUp    = "latest"
	DefaultMaxCatchUp = 100
	// DefaultConcurrency applies to a queue block without concurrency and to
	// the implicit default queue.
	DefaultConcurrency = 1
)

// Overlap policies: what a job does when its previous run is still pending or
// running at the next fire time.
const (
	OverlapSkip  = "skip"  // do not enqueue this fire
	OverlapQueue = "queue" // fire it once the previous run ends; only the newest waiting fire is kept
	OverlapAllow = "allow" // enqueue it and let it run concurrently
)

// Catch-up policies: what the scheduler does with fire times missed while it
// was not running.
const (
	CatchUpNone   = "none"   // skip them all
	CatchUpLatest = "latest" // run once, for the most recent missed slot
	CatchUpAll    = "all"    // run each missed slot, at most MaxCatchUp of them
)

// EnvVarPrefix is the prefix of environment variables that set variables:
// QUEUECTL_VAR_backup_dir sets var.backup_dir.
const EnvVarPrefix = "QUEUECTL_VAR_"

// File is a decoded configuration file.
type File struct {
	Path string // as given to Load, or the filename given to Parse

	// Database is "" if unset (or set to ""). A postgres:// or
	// postgresql:// URL is kept as written; anything else is a SQLite file
	// path, made absolute relative to the file's directory.
	Database string

	Defaults Retry // from the defaults block

	// Queues are in file order. If the file declares no "default" queue, an
	// implicit one (Implicit set, concurrency 1) is appended.
	Queues []Queue

	Jobs []Job // in file order

	Retention Retention // from the retention block; zero durations keep forever

	HTTP *HTTP // from the http block; nil without one
}

// Retry holds optional overrides; nil means "not set here". The pointers of
// one File may be shared between values (see Or); treat them as read-only.
type Retry struct {
	MaxRetries  *int
	BackoffBase *float64
	MaxBackoff  *time.Duration
	Timeout     *time.Duration
	// Outcome hooks: shell commands run after a job's outcome is recorded
	// ("" is unset). The most specific block that sets one wins.
	OnSuccess, OnFailure, OnDead string
	// HookTimeout bounds each hook; nil: unset (30s when no block sets it).
	HookTimeout *time.Duration
}

// Queue is a queue block.
type Queue struct {
	Name        string
	Concurrency int // >= 1
	// MaxRunning and the rate limit (RateCount starts per RatePer) are
	// the queue's global limits; zero is none.
	MaxRunning int
	RateCount  int
	RatePer    time.Duration
	Retry      Retry
	Implicit   bool // the built-in default queue, not declared in the file
}

// Job is a job block: a recurring job template.
type Job struct {
	Name       string
	Queue      string            // DefaultQueue if unset
	Schedule   string            // the spec as written; see package cronspec
	TimeZone   string            // IANA name, "UTC" by default
	Command    string            // fully evaluated; run by a shell
	Dir        string            // working directory, absolute (relative to the file's directory); default the file's directory
	Env        map[string]string // extra environment variables; nil if unset
	Overlap    string            // OverlapSkip (default), OverlapQueue or OverlapAllow
	CatchUp    string            // CatchUpNone, CatchUpLatest (default) or CatchUpAll
	MaxCatchUp int               // cap for CatchUpAll, >= 1, default 100
	Jitter     time.Duration     // random delay added to each fire, >= 0
	Priority   int               // default 0
	Enabled    bool              // default true
	Unique     bool              // skip a fire while a job of this template is pending
	Retry      Retry             // job-level overrides
}

// Options customise Load and Parse.
type Options struct {
	// Vars are variable values given on the command line (--var k=v). They
	// take precedence over QUEUECTL_VAR_k and over the variable's default.
	Vars map[string]string

	// LookupEnv is used by the env() function and for QUEUECTL_VAR_*
	// variables. nil means os.LookupEnv.
	LookupEnv func(string) (string, bool)

	// UndeclaredVarsWarn makes a value in Vars for a variable the file
	// does not declare a warning instead of an error: for a service that
	// reloads a file which dropped a variable it was started with a value
	// for (the value can only change with a restart).
	UndeclaredVarsWarn bool
}

// Load reads and decodes the file at path. The returned diagnostics may hold
// several errors; f is nil only when decoding could not continue (the file
// cannot be read or has syntax errors). When diags.HasErrors() is true, a
// non-nil f is a best-effort result for tooling and must not be used to run
// jobs.
func Load(path string, opts Options) (*File, hcl.Diagnostics) {
	src, err := os.ReadFile(path)
	if err != nil {
		return nil, hcl.Diagnostics{{
			Severity: hcl.DiagError,
			Summary:  "Cannot read configuration file",
			Detail:   fmt.Sprintf("Reading %s failed: %v.", path, err),
		}}
	}
	return Parse(src, path, opts)
}

// Parse is Load on bytes already read; filename is used in diagnostics, as
// File.Path, and to resolve relative paths.
func Parse(src []byte, filename string, opts Options) (*File, hcl.Diagnostics) {
	file, diags := hclsyntax.ParseConfig(src, filename, hcl.InitialPos)
	if diags.HasErrors() {
		return nil, diags
	}
	d := newDecoder(filename, opts)
	f := d.decodeFile(file.Body)
	sortDiagnostics(d.diags)
	return f, append(diags, d.diags...)
}

// ParseDuration parses a duration as written in the file: a Go duration
// ("90s", "10m", "1h30m") optionally starting with days ("1d", "1d12h"; a
// day is 24 hours). Signs are accepted; callers check the range.
func ParseDuration(s string) (time.Duration, error) {
	return cronspec.ParseDuration(s)
}

// Queue returns the queue named name, including the implicit default queue.
func (f *File) Queue(name string) (Queue, bool) {
	for _, q := range f.Queues {
		if q.Name == name {
			return q, true
		}
	}
	return Queue{}, false
}

// RetryFor returns the retry settings of a job in the named queue: the job's
// own settings override the queue's, which override the defaults block.
// Fields still nil are left to the store's configuration.
func (f *File) RetryFor(queue string, job Retry) Retry {
	q, _ := f.Queue(queue)
	return job.Or(q.Retry).Or(f.Defaults)
}

// Or returns r with each unset field taken from fallback.
func (r Retry) Or(fallback Retry) Retry {
	if r.MaxRetries == nil {
		r.MaxRetries = fallback.MaxRetries
	}
	if r.BackoffBase == nil {
		r.BackoffBase = fallback.BackoffBase
	}
	if r.MaxBackoff == nil {
		r.MaxBackoff = fallback.MaxBackoff
	}
	if r.Timeout == nil {
		r.Timeout = fallback.Timeout
	}
	if r.HookTimeout == nil {
		r.HookTimeout = fallback.HookTimeout
	}
	for _, h := range []struct {
		dst *string
		fb  string
	}{{&r.OnSuccess, fallback.OnSuccess}, {&r.OnFailure, fallback.OnFailure}, {&r.OnDead, fallback.OnDead}} {
		if *h.dst == "" {
			*h.dst = h.fb
		}
	}
	return r
}

// ParseSchedule parses the job's schedule in its time zone. It only fails for
// a job from a file that had errors.
func (j Job) ParseSchedule() (*cronspec.Schedule, error) {
	loc, err := loadLocation(j.TimeZone)
	if err != nil {
		return nil, err
	}
	return cronspec.Parse(j.Schedule, loc)
}
