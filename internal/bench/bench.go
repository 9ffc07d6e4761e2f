// Package bench measures queuectl on a scratch database: batch enqueue, the
// engine's claim+complete rate with a no-op executor, shell jobs end to end
// against an `xargs -P` baseline, enqueue-to-start latency, idle cost, and
// claim rate with a large table. Every figure comes with the median of
// several runs and a ratio against a baseline or target measured or stated
// in the same run, because machines are noisy.
//
// It drives the real queuectl binary for everything a user would run as a
// process (enqueue, worker start/stop) and the engine in-process for the
// no-op engine rate (RunNoopEngine), which store packages also run as a Go
// benchmark (storetest.BenchEngineNoop) for go test's profilers.
package bench

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync/atomic"
	"time"

	"github.com/queuectl/queuectl/queue"
)

// Config describes one bench run.
type Config struct {
	Binary string // the queuectl binary to run as a process
	// NewDB creates an empty scratch database and returns its DSN and a
	// cleanup function.
	NewDB func(ctx context.Context) (dsn string, cleanup func(), err error)
	// Open opens a store on a DSN NewDB returned.
	Open func(ctx context.Context, dsn string) (queue.Store, error)
	// Size reports the bytes a database takes (0 if unknown).
	Size func(ctx context.Context, st queue.Store, dsn string) (int64, error)

	Runs           int           // runs per figure; the median is reported
	EnqueueJobs    int           // batch enqueue size
	EngineJobs     int           // jobs per engine-rate run
	ShellJobs      int           // jobs per shell end-to-end run
	Workers        int           // worker processes for shell jobs
	LatencySamples int           // enqueue-to-start samples
	IdleWorkers    int           // workers measured while idle
	IdleFor        time.Duration // how long idle CPU is measured
	ScaleFinished  int           // finished jobs in the large table
	ScalePending   int           // pending jobs in the large table
	RateFor        time.Duration // how long the ratelimit scenario counts starts
	LoadWorkers    int           // worker processes of the enqueue-load and enqueue-http scenarios
	LoadEnqueuers  int           // concurrent `queuectl enqueue` loops of enqueue-load, HTTP clients of enqueue-http
	LoadFor        time.Duration // how long enqueue-load and enqueue-http run their enqueuers
	Only           []string      // run only these scenarios (names); empty = all
	Progress       io.Writer     // progress lines; nil = none
}

// Defaults are the full-size settings.
func Defaults() Config {
	return Config{
		Runs: 3, EnqueueJobs: 100_000, EngineJobs: 20_000, ShellJobs: 2_000, Workers: 2,
		LatencySamples: 200, IdleWorkers: 4, IdleFor: 30 * time.Second,
		ScaleFinished: 1_000_000, ScalePending: 100_000, RateFor: 20 * time.Second,
		LoadWorkers: 16, LoadEnqueuers: 48, LoadFor: 20 * time.Second,
	}
}

// Quick are small settings for a smoke run (and tests).
func Quick() Config {
	return Config{
		Runs: 1, EnqueueJobs: 5_000, EngineJobs: 2_000, ShellJobs: 200, Workers: 2,
		LatencySamples: 20, IdleWorkers: 2, IdleFor: 2 * time.Second,
		ScaleFinished: 20_000, ScalePending: 5_000, RateFor: 3 * time.Second,
		LoadWorkers: 4, LoadEnqueuers: 8, LoadFor: 3 * time.Second,
	}
}

// Result is one measured figure.
type Result struct {
	Scenario string    `json:"scenario"`
	Name     string    `json:"name"`
	Value    float64   `json:"value"` // the median of Runs
	Unit     string    `json:"unit"`
	Runs     []float64 `json:"runs"`
	// Against is what Ratio compares with: a baseline measured in the same
	// run (e.g. "xargs -P 2") or a target ("target").
	Against string  `json:"against"`
	Base    float64 `json:"base"`
	Ratio   float64 `json:"ratio"` // Value / Base
	// Better is "higher" or "lower": which direction of Ratio is good.
	Better string `json:"better"`
	// Need is the ratio the figure must reach to pass when it is not 1:
	// the large-table rate needs only to be within 1.5 x of the empty
	// table's.
	Need float64 `json:"need,omitempty"`
	Note string  `json:"note,omitempty"`
}

// Pass reports whether the figure meets its target: a ratio of at least
// Need (1 unless set) when higher is better, at most Need when lower is.
func (r Result) Pass() bool {
	if r.Base == 0 {
		return true
	}
	need := r.Need
	if need == 0 {
		need = 1
	}
	if r.Better == "lower" {
		return r.Ratio <= need
	}
	return r.Ratio >= need
}

// scenario is one named measurement.
type scenario struct {
	name string
	run  func(b *runner, ctx context.Context) ([]Result, error)
}

var scenarios = []scenario{
	{"enqueue", (*runner).enqueue},
	{"engine", (*runner).engine},
	{"shell", (*runner).shell},
	{"spawn", (*runner).spawn},
	{"cpu", (*runner).cpu},
	{"scaling", (*runner).scaling},
	{"latency", (*runner).latency},
	{"idle", (*runner).idle},
	{"scale", (*runner).scale},
	{"limits", (*runner).limits},
	{"ratelimit", (*runner).ratelimit},
	{"enqueue-load", (*runner).enqueueLoad},
	{"enqueue-http", (*runner).enqueueHTTP},
}

// Scenarios lists the scenario names in the order they run.
func Scenarios() []string {
	var out []string
	for _, s := range scenarios {
		out = append(out, s.name)
	}
	return out
}

type runner struct {
	cfg Config
	tmp string
}

// Run runs the selected scenarios and returns their figures.
func Run(ctx context.Context, cfg Config) ([]Result, error) {
	if cfg.Runs < 1 {
		cfg.Runs = 1
	}
	tmp, err := os.MkdirTemp("", "queuectl-bench-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	b := &runner{cfg: cfg, tmp: tmp}
	var out []Result
	for _, s := range scenarios {
		if len(cfg.Only) > 0 && !contains(cfg.Only, s.name) && !(s.name == "engine" && contains(cfg.Only, "scale")) {
			continue
		}
		b.progress("scenario %s", s.name)
		rs, err := s.run(b, ctx)
		if err != nil {
			return out, fmt.Errorf("bench %s: %w", s.name, err)
		}
		if len(cfg.Only) > 0 && !contains(cfg.Only, s.name) {
			continue // engine ran only as the baseline of scale
		}
		out = append(out, rs...)
	}
	return out, nil
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func (b *runner) progress(format string, a ...any) {
	if b.cfg.Progress != nil {
		fmt.Fprintf(b.cfg.Progress, "bench: "+format+"\n", a...)
	}
}

// median of xs (sorted copy).
func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// percentile of sorted xs (nearest rank).
func percentile(sorted []float64, p float64) float64 {
	if len(sorted) == 0 {
		return 0
	}
	i := int(p*float64(len(sorted))+0.999999) - 1
	return sorted[max(0, min(i, len(sorted)-1))]
}

func result(scen, name, unit string, runs []float64, against string, base float64, better string) Result {
	r := Result{Scenario: scen, Name: name, Unit: unit, Runs: runs, Value: median(runs), Against: against, Base: base, Better: better}
	if base != 0 {
		r.Ratio = r.Value / base
	}
	return r
}

// repeat runs fn cfg.Runs times, each on a fresh database.
func (b *runner) repeat(ctx context.Context, fn func(ctx context.Context, dsn string) (float64, error)) ([]float64, error) {
	var out []float64
	for i := 0; i < b.cfg.Runs; i++ {
		v, err := b.oneRun(ctx, fn)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, nil
}

// oneRun runs fn once on a fresh database.
func (b *runner) oneRun(ctx context.Context, fn func(ctx context.Context, dsn string) (float64, error)) (float64, error) {
	dsn, cleanup, err := b.cfg.NewDB(ctx)
	if err != nil {
		return 0, err
	}
	defer cleanup()
	return fn(ctx, dsn)
}

// cli runs the queuectl binary with its own home and the given database.
func (b *runner) cli(ctx context.Context, dsn string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, b.cfg.Binary, append([]string{"--db", dsn}, args...)...)
	cmd.Env = append(os.Environ(), "QUEUECTL_HOME="+filepath.Join(b.tmp, "home"), "QUEUECTL_DB=")
	return cmd
}

func (b *runner) cliOK(ctx context.Context, dsn string, args ...string) (string, error) {
	cmd := b.cli(ctx, dsn, args...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("queuectl %s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return string(out), nil
}

// newJobs builds n resolved pending jobs running command, with ids as
// enqueue makes them (queue.NewID: they sort by creation time, which is
// what shapes the primary key's pages).
func newJobs(n int, command string, now time.Time) ([]*queue.Job, error) {
	out := make([]*queue.Job, 0, n)
	for range n {
		j, err := queue.NewJob{ID: queue.NewID(), Command: command}.Resolve(queue.DefaultSettings(), now)
		if err != nil {
			return nil, err
		}
		out = append(out, j)
	}
	return out, nil
}

// insert stores jobs in batches.
func insert(ctx context.Context, st queue.Store, jobs []*queue.Job) error {
	for len(jobs) > 0 {
		n := min(len(jobs), 10_000)
		if err := st.InsertJobs(ctx, jobs[:n]); err != nil {
			return err
		}
		jobs = jobs[n:]
	}
	return nil
}

// AddJobs stores n new pending jobs that run command, due now: the backlog
// a scenario (or a store package's Go benchmark) runs through.
func AddJobs(ctx context.Context, st queue.Store, n int, command string) error {
	jobs, err := newJobs(n, command, time.Now())
	if err != nil {
		return err
	}
	return insert(ctx, st, jobs)
}

// counting wraps a store, counts its claims and finish batches, and
// signals when n finishes have been applied.
type counting struct {
	queue.Store
	n    int64
	done atomic.Int64
	ch   chan struct{}

	claims, claimed, finishes atomic.Int64
}

func (c *counting) ClaimJobs(ctx context.Context, p queue.ClaimParams) ([]*queue.Job, error) {
	jobs, err := c.Store.ClaimJobs(ctx, p)
	c.claims.Add(1)
	c.claimed.Add(int64(len(jobs)))
	return jobs, err
}

func (c *counting) FinishJobs(ctx context.Context, fs []queue.Finish) ([]bool, error) {
	applied, err := c.Store.FinishJobs(ctx, fs)
	c.finished(applied)
	return applied, err
}

// finished counts one finish batch and its applied outcomes.
func (c *counting) finished(applied []bool) {
	c.finishes.Add(1)
	for _, ok := range applied {
		if ok && c.done.Add(1) == c.n {
			close(c.ch)
		}
	}
}

// countingBoth is counting for a store that is a queue.FinishClaimer: a
// call counts as a finish batch when it carries outcomes and as a claim
// per claim it carries, though it is one transaction.
type countingBoth struct {
	*counting
	both queue.FinishClaimer
}

func (c countingBoth) FinishAndClaim(ctx context.Context, fs []queue.Finish, cs []queue.ClaimParams) ([]bool, [][]*queue.Job, error) {
	applied, jobs, err := c.both.FinishAndClaim(ctx, fs, cs)
	if err != nil {
		return applied, jobs, err // the outcomes are written again; claims retry
	}
	if len(fs) > 0 {
		c.finished(applied)
	}
	c.claims.Add(int64(len(cs)))
	for _, js := range jobs {
		c.claimed.Add(int64(len(js)))
	}
	return applied, jobs, nil
}

// countingStore wraps st in counting, keeping it a queue.FinishClaimer
// when it is one.
func countingStore(st queue.Store, n int) (*counting, queue.Store) {
	c := &counting{Store: st, n: int64(n), ch: make(chan struct{})}
	if both, ok := st.(queue.FinishClaimer); ok {
		return c, countingBoth{c, both}
	}
	return c, c
}
