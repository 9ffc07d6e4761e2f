// Command riverbench measures River (github.com/riverqueue/river) on the same
// work queuectl's benchmark uses, so bench/compare can put both in one table:
//
//   - insert: InsertMany (and InsertManyFast, COPY FROM) of -insert jobs in
//     one call, jobs/s;
//   - noop: a worker that does nothing, at each of -workers MaxWorkers, over
//     -noop pre-inserted jobs, from client start to the last completion;
//   - shell: a worker running `sh -c true` (exec.Command), -shell-workers
//     MaxWorkers, over -shell pre-inserted jobs, from client start to the
//     last completion.
//
// Every run gets a scratch schema (migrated with rivermigrate, dropped after),
// so runs never see each other's jobs. It prints one JSON object with every
// run's figure; bench/compare takes the medians.
//
// River is its own Go module here so it never enters queuectl's go.mod.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"os/exec"
	"os/signal"
	"runtime/debug"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivermigrate"
)

type noopArgs struct{}

func (noopArgs) Kind() string { return "noop" }

type noopWorker struct {
	river.WorkerDefaults[noopArgs]
}

func (noopWorker) Work(context.Context, *river.Job[noopArgs]) error { return nil }

type shellArgs struct {
	Command string `json:"command"`
}

func (shellArgs) Kind() string { return "shell" }

type shellWorker struct {
	river.WorkerDefaults[shellArgs]
}

func (shellWorker) Work(ctx context.Context, job *river.Job[shellArgs]) error {
	return exec.CommandContext(ctx, "sh", "-c", job.Args.Command).Run()
}

// Result is one measured figure with every run's value.
type Result struct {
	Name    string    `json:"name"`
	Jobs    int       `json:"jobs"`
	Workers int       `json:"workers,omitempty"`
	Unit    string    `json:"unit"`
	Runs    []float64 `json:"runs"`
}

type Output struct {
	RiverVersion      string   `json:"river_version"`
	FetchCooldown     string   `json:"fetch_cooldown"`
	FetchPollInterval string   `json:"fetch_poll_interval"`
	Results           []Result `json:"results"`
}

type bench struct {
	url           string
	fetchCooldown time.Duration
	fetchPoll     time.Duration
	log           *slog.Logger
}

func main() {
	var (
		b            bench
		runs         = flag.Int("runs", 3, "runs per figure")
		insertJobs   = flag.Int("insert", 100_000, "jobs per InsertMany measurement (0 = skip)")
		noopJobs     = flag.Int("noop", 20_000, "jobs per no-op worker measurement (0 = skip)")
		workersFlag  = flag.String("workers", "1,8,64", "MaxWorkers values for the no-op measurement")
		shellJobs    = flag.Int("shell", 2_000, "jobs per shell measurement (0 = skip)")
		shellWorkers = flag.Int("shell-workers", 2, "MaxWorkers for the shell measurement")
		only         = flag.String("only", "insert,noop,shell", "measurements to run")
		ping         = flag.Bool("ping", false, "print the server's PostgreSQL version and exit (fails if unreachable)")
	)
	flag.StringVar(&b.url, "db", "postgres://root@127.0.0.1:5432/test?sslmode=disable", "PostgreSQL URL (a scratch schema is made in it per run)")
	flag.DurationVar(&b.fetchCooldown, "fetch-cooldown", time.Millisecond, "River FetchCooldown (River's default is 100ms, minimum 1ms)")
	flag.DurationVar(&b.fetchPoll, "fetch-poll-interval", 10*time.Millisecond, "River FetchPollInterval (River's default is 1s, minimum 1ms)")
	flag.Parse()
	b.log = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError}))

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	if *ping {
		if err := printServerVersion(ctx, b.url); err != nil {
			fmt.Fprintln(os.Stderr, "riverbench:", err)
			os.Exit(1)
		}
		return
	}
	out := Output{RiverVersion: riverVersion(), FetchCooldown: b.fetchCooldown.String(), FetchPollInterval: b.fetchPoll.String()}
	want := map[string]bool{}
	for _, s := range strings.Split(*only, ",") {
		want[strings.TrimSpace(s)] = true
	}
	fail := func(err error) {
		fmt.Fprintln(os.Stderr, "riverbench:", err)
		os.Exit(1)
	}
	if want["insert"] && *insertJobs > 0 {
		for _, fast := range []bool{false, true} {
			name := "insert_many"
			if fast {
				name = "insert_many_fast"
			}
			r := Result{Name: name, Jobs: *insertJobs, Unit: "jobs/s"}
			out.Results = append(out.Results, measure(r, *runs, name, fail, func() (float64, error) {
				return b.insertRate(ctx, *insertJobs, fast)
			}))
		}
	}
	if want["noop"] && *noopJobs > 0 {
		for _, f := range strings.Split(*workersFlag, ",") {
			w, err := strconv.Atoi(strings.TrimSpace(f))
			if err != nil || w < 1 {
				fail(fmt.Errorf("-workers %q: want positive integers", *workersFlag))
			}
			r := Result{Name: "noop", Jobs: *noopJobs, Workers: w, Unit: "jobs/s"}
			out.Results = append(out.Results, measure(r, *runs, fmt.Sprintf("noop %d workers", w), fail, func() (float64, error) {
				return b.workRate(ctx, *noopJobs, w, func() river.JobArgs { return noopArgs{} })
			}))
		}
	}
	if want["shell"] && *shellJobs > 0 {
		r := Result{Name: "shell", Jobs: *shellJobs, Workers: *shellWorkers, Unit: "jobs/s"}
		out.Results = append(out.Results, measure(r, *runs, fmt.Sprintf("shell %d workers", *shellWorkers), fail, func() (float64, error) {
			return b.workRate(ctx, *shellJobs, *shellWorkers, func() river.JobArgs { return shellArgs{Command: "true"} })
		}))
	}
	enc := json.NewEncoder(os.Stdout)
	enc.SetIndent("", "  ")
	if err := enc.Encode(out); err != nil {
		fail(err)
	}
}

// measure runs one figure runs times and records each run in r; a failed
// run ends the program through fail.
func measure(r Result, runs int, label string, fail func(error), run func() (float64, error)) Result {
	for i := range runs {
		progress("%s run %d/%d: %d jobs", label, i+1, runs, r.Jobs)
		v, err := run()
		if err != nil {
			fail(fmt.Errorf("%s: %w", label, err))
		}
		r.Runs = append(r.Runs, v)
	}
	return r
}

// printServerVersion prints the PostgreSQL server's version: a check that
// the server named by url answers.
func printServerVersion(ctx context.Context, url string) error {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	var v string
	if err := conn.QueryRow(ctx, "SHOW server_version").Scan(&v); err != nil {
		return err
	}
	fmt.Println(v)
	return nil
}

func progress(format string, a ...any) {
	fmt.Fprintf(os.Stderr, "riverbench: "+format+"\n", a...)
}

func riverVersion() string {
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, d := range bi.Deps {
			if d.Path == "github.com/riverqueue/river" {
				return d.Version
			}
		}
	}
	return "unknown"
}

// scratch creates a migrated scratch schema and a pool; cleanup drops both.
func (b *bench) scratch(ctx context.Context) (*pgxpool.Pool, string, func(), error) {
	schema := fmt.Sprintf("river_bench_%08x", rand.Uint32())
	conn, err := pgx.Connect(ctx, b.url)
	if err != nil {
		return nil, "", nil, fmt.Errorf("connect to PostgreSQL: %w", err)
	}
	_, err = conn.Exec(ctx, "CREATE SCHEMA "+schema)
	conn.Close(ctx)
	if err != nil {
		return nil, "", nil, fmt.Errorf("create scratch schema: %w", err)
	}
	drop := func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if conn, err := pgx.Connect(ctx, b.url); err == nil {
			conn.Exec(ctx, "DROP SCHEMA "+schema+" CASCADE")
			conn.Close(ctx)
		}
	}
	cfg, err := pgxpool.ParseConfig(b.url)
	if err != nil {
		drop()
		return nil, "", nil, err
	}
	// Enough connections that 64 workers, the completer and the maintenance
	// services never queue for one (pgxpool's default is max(4, NumCPU)).
	cfg.MaxConns = 20
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		drop()
		return nil, "", nil, err
	}
	migrator, err := rivermigrate.New(riverpgxv5.New(pool), &rivermigrate.Config{Schema: schema, Logger: b.log})
	if err == nil {
		_, err = migrator.Migrate(ctx, rivermigrate.DirectionUp, nil)
	}
	if err != nil {
		pool.Close()
		drop()
		return nil, "", nil, fmt.Errorf("migrate: %w", err)
	}
	return pool, schema, func() { pool.Close(); drop() }, nil
}

func (b *bench) client(pool *pgxpool.Pool, schema string, workers int) (*river.Client[pgx.Tx], error) {
	ws := river.NewWorkers()
	river.AddWorker(ws, noopWorker{})
	river.AddWorker(ws, shellWorker{})
	return river.NewClient(riverpgxv5.New(pool), &river.Config{
		Schema:            schema,
		Logger:            b.log,
		Workers:           ws,
		Queues:            map[string]river.QueueConfig{river.QueueDefault: {MaxWorkers: workers}},
		FetchCooldown:     b.fetchCooldown,
		FetchPollInterval: b.fetchPoll,
	})
}

func params(n int, args func() river.JobArgs) []river.InsertManyParams {
	ps := make([]river.InsertManyParams, n)
	for i := range ps {
		ps[i] = river.InsertManyParams{Args: args()}
	}
	return ps
}

// insertRate times one InsertMany (or InsertManyFast) call of n no-op jobs.
func (b *bench) insertRate(ctx context.Context, n int, fast bool) (float64, error) {
	pool, schema, cleanup, err := b.scratch(ctx)
	if err != nil {
		return 0, err
	}
	defer cleanup()
	client, err := b.client(pool, schema, 1)
	if err != nil {
		return 0, err
	}
	ps := params(n, func() river.JobArgs { return noopArgs{} })
	start := time.Now()
	if fast {
		var got int
		got, err = client.InsertManyFast(ctx, ps)
		if err == nil && got != n {
			err = fmt.Errorf("inserted %d jobs, want %d", got, n)
		}
	} else {
		var got int
		rs, ierr := client.InsertMany(ctx, ps)
		got, err = len(rs), ierr
		if err == nil && got != n {
			err = fmt.Errorf("inserted %d jobs, want %d", got, n)
		}
	}
	elapsed := time.Since(start)
	if err != nil {
		return 0, err
	}
	return float64(n) / elapsed.Seconds(), nil
}

// workRate pre-inserts n jobs (not timed), then times from client start to
// the n-th completion event (sent after the completion is committed).
func (b *bench) workRate(ctx context.Context, n, workers int, args func() river.JobArgs) (float64, error) {
	pool, schema, cleanup, err := b.scratch(ctx)
	if err != nil {
		return 0, err
	}
	defer cleanup()
	client, err := b.client(pool, schema, workers)
	if err != nil {
		return 0, err
	}
	ps := params(n, args)
	for len(ps) > 0 {
		k := min(len(ps), 10_000)
		if _, err := client.InsertManyFast(ctx, ps[:k]); err != nil {
			return 0, fmt.Errorf("insert: %w", err)
		}
		ps = ps[k:]
	}
	events, cancel := client.SubscribeConfig(&river.SubscribeConfig{
		ChanSize: n + 1000,
		Kinds:    []river.EventKind{river.EventKindJobCompleted, river.EventKindJobFailed},
	})
	defer cancel()
	start := time.Now()
	if err := client.Start(ctx); err != nil {
		return 0, fmt.Errorf("start: %w", err)
	}
	defer func() {
		sctx, scancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer scancel()
		client.Stop(sctx)
	}()
	timeout := time.After(10 * time.Minute)
	for done := 0; done < n; {
		select {
		case ev := <-events:
			if ev == nil {
				return 0, errors.New("subscription closed")
			}
			if ev.Kind == river.EventKindJobFailed {
				return 0, fmt.Errorf("job %d failed: %v", ev.Job.ID, ev.Job.Errors)
			}
			done++
		case <-timeout:
			return 0, fmt.Errorf("%d of %d jobs completed in 10 minutes", done, n)
		case <-ctx.Done():
			return 0, ctx.Err()
		}
	}
	return float64(n) / time.Since(start).Seconds(), nil
}
