package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/queuectl/queuectl/internal/bench"
	"github.com/queuectl/queuectl/queue"
	"github.com/spf13/cobra"
)

func (a *app) benchCmd() *cobra.Command {
	var asJSON, quick bool
	var only []string
	var runs, workers int
	cmd := &cobra.Command{
		Use:   "bench",
		Short: "Measure queuectl on a scratch database",
		Long: `Measure batch enqueue, the engine's claim+complete rate with a no-op
executor (1, 8 and 64 slots), shell jobs end to end against xargs -P and
against N goroutines spawning sh -c true, the CPU and write-lock time per
shell job, worker scaling, enqueue-to-start latency, one enqueue call among
busy workers and enqueuers (a process per call, and over one server's HTTP
API), idle CPU and memory, and the claim rate with a large table. Each
figure is the median of several runs with a ratio against a baseline
measured in the same run, or against its target.

The scratch database is a temporary SQLite file, or a new schema in the
PostgreSQL database given with --db postgres://… (dropped afterwards).
Scenarios: ` + strings.Join(bench.Scenarios(), ", ") + `.`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg := bench.Defaults()
			if quick {
				cfg = bench.Quick()
			}
			for _, o := range only {
				if !contains(bench.Scenarios(), o) {
					return usagef("--only %q: scenarios are %s", o, strings.Join(bench.Scenarios(), ", "))
				}
			}
			if cmd.Flags().Changed("runs") {
				if runs < 1 {
					return usagef("--runs %d: must be at least 1", runs)
				}
				cfg.Runs = runs
			}
			if cmd.Flags().Changed("workers") {
				if workers < 1 {
					return usagef("--workers %d: must be at least 1", workers)
				}
				cfg.Workers = workers
			}
			cfg.Only = only
			self, err := os.Executable()
			if err != nil {
				return err
			}
			cfg.Binary = self
			cfg.Open = openStore
			cfg.Progress = a.stderr
			if err := a.benchDatabases(&cfg); err != nil {
				return err
			}
			results, err := bench.Run(cmd.Context(), cfg)
			if err != nil {
				return err
			}
			if asJSON {
				return a.printJSON(results)
			}
			return a.printBench(results)
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	cmd.Flags().BoolVar(&quick, "quick", false, "small sizes, one run: a smoke test, not a measurement")
	cmd.Flags().StringSliceVar(&only, "only", nil, "run only these scenarios (comma-separated)")
	cmd.Flags().IntVar(&runs, "runs", 3, "runs per figure (the median is reported)")
	cmd.Flags().IntVar(&workers, "workers", 2, "worker processes for the shell scenario")
	return cmd
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// benchDatabases sets how scratch databases are made and measured.
func (a *app) benchDatabases(cfg *bench.Config) error {
	if err := checkDSN("--db", a.dbFlag); err != nil {
		return err
	}
	if !isPostgresURL(a.dbFlag) {
		cfg.NewDB = func(ctx context.Context) (string, func(), error) {
			dir, err := os.MkdirTemp("", "queuectl-bench-db-")
			if err != nil {
				return "", nil, err
			}
			return filepath.Join(dir, "queue.db"), func() { os.RemoveAll(dir) }, nil
		}
		cfg.Size = func(_ context.Context, _ queue.Store, dsn string) (int64, error) {
			var total int64
			for _, suffix := range []string{"", "-wal"} {
				if st, err := os.Stat(dsn + suffix); err == nil {
					total += st.Size()
				}
			}
			return total, nil
		}
		return nil
	}
	base := a.dbFlag
	cfg.NewDB = func(ctx context.Context) (string, func(), error) {
		schema := fmt.Sprintf("queuectl_bench_%08x", rand.Uint32())
		if err := pgExec(ctx, base, "CREATE SCHEMA "+schema); err != nil {
			return "", nil, fmt.Errorf("create scratch schema: %w", err)
		}
		sep := "?"
		if strings.Contains(base, "?") {
			sep = "&"
		}
		return base + sep + "search_path=" + schema, func() {
			pgExec(context.Background(), base, "DROP SCHEMA "+schema+" CASCADE")
		}, nil
	}
	cfg.Size = func(ctx context.Context, _ queue.Store, dsn string) (int64, error) {
		conn, err := pgx.Connect(ctx, dsn)
		if err != nil {
			return 0, err
		}
		defer conn.Close(ctx)
		var size int64
		err = conn.QueryRow(ctx, `SELECT coalesce(sum(pg_total_relation_size(c.oid)), 0)::bigint FROM pg_class c
			JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = current_schema() AND c.relkind = 'r'`).Scan(&size)
		return size, err
	}
	return nil
}

func pgExec(ctx context.Context, url, sql string) error {
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	_, err = conn.Exec(ctx, sql)
	return err
}

func (a *app) printBench(results []bench.Result) error {
	tw := a.table()
	fmt.Fprintln(tw, "SCENARIO\tFIGURE\tMEDIAN\tRUNS\tAGAINST\tRATIO\tOK")
	for _, r := range results {
		var runs []string
		for _, v := range r.Runs {
			runs = append(runs, fmt.Sprintf("%.4g", v))
		}
		if len(runs) > 5 {
			runs = []string{fmt.Sprintf("%d samples", len(runs))}
		}
		ratio, ok := "-", "-"
		if r.Base != 0 {
			ratio = fmt.Sprintf("%.2f (%s %.4g)", r.Ratio, r.Against, r.Base)
			ok = "yes"
			if !r.Pass() {
				ok = "NO"
			}
		}
		fmt.Fprintf(tw, "%s\t%s\t%.4g %s\t%s\t%s\t%s\t%s\n", r.Scenario, r.Name, r.Value, r.Unit, strings.Join(runs, " "), r.Better+" is better", ratio, ok)
	}
	return tw.Flush()
}
