package postgres_test

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/queuectl/queuectl/queue"
	"github.com/queuectl/queuectl/queue/postgres"
)

// TestClaimUsesIndexInOrder checks, on a table large enough for the
// planner to care, that the claim walks a claim index in claim order (no
// sort of the runnable jobs, no sequential scan), both with the parameters
// at hand (custom plan) and for the generic plan a long-lived prepared
// statement may switch to; with statistics that match the table, and with
// stale ones taken while no job was runnable (a queue drained, then given a
// burst), from which the planner expects a handful of runnable rows.
func TestClaimUsesIndexInOrder(t *testing.T) {
	for _, stats := range []string{"fresh", "stale", "none"} {
		t.Run(stats+" statistics", func(t *testing.T) {
			conn := migratedConn(t)
			fillClaimable(t, conn, stats)
			checkClaimPlans(t, conn)
		})
	}
}

// fillClaimable inserts 50,000 jobs, a fifth of them runnable, and
// analyzes the table (stats "fresh"), or analyzes it before the fifth
// became runnable ("stale"); or inserts 50,000 runnable jobs into a table
// never analyzed ("none": a burst into a new schema).
func fillClaimable(t *testing.T, conn *pgx.Conn, stats string) {
	t.Helper()
	ctx := tctx(t)
	stale := stats == "stale"
	runnable := `CASE WHEN i % 10 = 0 THEN 'pending' WHEN i % 10 = 1 THEN 'failed' ELSE 'completed' END`
	switch stats {
	case "stale":
		runnable = `'completed'`
	case "none":
		runnable = `CASE WHEN i % 2 = 0 THEN 'pending' ELSE 'failed' END`
	}
	_, err := conn.Exec(ctx, `INSERT INTO jobs (id, queue, command, state, priority, max_retries, backoff_base,
		max_backoff_us, run_at, created_at, updated_at)
		SELECT 'j' || i, 'q' || (i % 5), 'true', `+runnable+`,
			i % 3, 3, 2, 3600000000,
			timestamptz '2026-03-01 12:00:00+00' - (i % 1000) * interval '1 second',
			timestamptz '2026-03-01 11:00:00+00' + i * interval '1 millisecond',
			timestamptz '2026-03-01 12:00:00+00'
		FROM generate_series(1, 50000) AS i`)
	if err != nil {
		t.Fatal(err)
	}
	if stats == "none" {
		return
	}
	if _, err := conn.Exec(ctx, `ANALYZE jobs`); err != nil {
		t.Fatal(err)
	}
	if stale {
		_, err := conn.Exec(ctx, `UPDATE jobs SET state = CASE WHEN substr(id, 2)::int % 10 = 0 THEN 'pending' ELSE 'failed' END
			WHERE substr(id, 2)::int % 10 IN (0, 1)`)
		if err != nil {
			t.Fatal(err)
		}
	}
}

// checkClaimPlans explains the claim for no queue, one queue and two, as
// the store runs it: in a transaction begun with claimSettings.
func checkClaimPlans(t *testing.T, conn *pgx.Conn) {
	t.Helper()
	ctx := tctx(t)
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	for _, queues := range [][]string{nil, {"q1"}, {"q1", "q2"}} {
		p := queue.ClaimParams{Worker: "w", Queues: queues, Limit: 8, Now: now, LeaseUntil: now.Add(time.Minute)}
		wantIndex := "jobs_claim "
		if len(queues) == 1 {
			wantIndex = "jobs_claim_queue "
		}
		inClaimTx := func(fn func()) {
			t.Helper()
			for _, sql := range []string{"BEGIN", postgres.ClaimSettings} {
				if _, err := conn.Exec(ctx, sql); err != nil {
					t.Fatal(err)
				}
			}
			fn()
			if _, err := conn.Exec(ctx, "ROLLBACK"); err != nil {
				t.Fatal(err)
			}
		}
		inClaimTx(func() {
			custom := explain(t, conn, "EXPLAIN "+postgres.ClaimSQL(queues, p.Limit), postgres.ClaimArgs(p)...)
			checkPlan(t, fmt.Sprintf("custom plan, queues %v", queues), custom, wantIndex)
		})
		if len(queues) == 1 {
			// The same queue, limited: its part of a limited claim
			// (controls.go) walks the queue's claim index likewise.
			query, args := postgres.LimitedClaimSQL(p, queues, nil, map[string]int{queues[0]: 3})
			inClaimTx(func() {
				plan := explain(t, conn, "EXPLAIN "+query, args...)
				checkPlan(t, fmt.Sprintf("limited claim, queue %v", queues), plan, wantIndex)
			})
		}

		// A generic plan: prepared, parameters unknown at planning.
		name := fmt.Sprintf("claim_%d", len(queues))
		if _, err := conn.Exec(ctx, "PREPARE "+name+" AS "+postgres.ClaimSQL(queues, p.Limit)); err != nil {
			t.Fatal(err)
		}
		lits := []string{"'2026-03-01 12:00:00+00'", "'w'", "'2026-03-01 12:01:00+00'"}
		switch len(queues) {
		case 1:
			lits = append(lits, "'q1'")
		case 2:
			lits = append(lits, "'{q1,q2}'")
		}
		lits = append(lits, "8")
		inClaimTx(func() {
			if _, err := conn.Exec(ctx, "SET LOCAL plan_cache_mode = force_generic_plan"); err != nil {
				t.Fatal(err)
			}
			generic := explain(t, conn, "EXPLAIN EXECUTE "+name+"("+strings.Join(lits, ", ")+")")
			checkPlan(t, fmt.Sprintf("generic plan, queues %v", queues), generic, wantIndex)
		})
	}
}

// migratedConn returns a connection to a new schema that holds the
// current tables, closed when the test ends.
func migratedConn(t *testing.T) *pgx.Conn {
	t.Helper()
	_, u := newSchema(t)
	open(t, u).Close() // create the tables
	return connect(t, u)
}

// connect opens a connection to u, closed when the test ends.
func connect(t testing.TB, u string) *pgx.Conn {
	t.Helper()
	conn, err := pgx.Connect(tctx(t), u)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	return conn
}

func explain(t *testing.T, conn *pgx.Conn, sql string, args ...any) string {
	t.Helper()
	rows, err := conn.Query(tctx(t), sql, args...)
	if err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	lines, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	return strings.Join(lines, "\n")
}

// checkPlan checks the part of a claim's plan that picks the jobs (CTE c,
// or a limited claim's parts), up to the next CTE: the limited claim's
// merge of its parts and the counting CTEs sort their few rows.
func checkPlan(t *testing.T, what, plan, wantIndex string) {
	t.Helper()
	t.Logf("%s:\n%s", what, plan)
	pick, _, _ := strings.Cut(plan, "CTE u\n")
	pick, _, _ = strings.Cut(pick, "CTE pick\n")
	if !strings.Contains(pick, "Index Scan using "+wantIndex+"on jobs") || !strings.Contains(pick, "LockRows") ||
		strings.Contains(pick, "Sort") || strings.Contains(plan, "Seq Scan") {
		t.Errorf("%s: want an ordered scan of %s with row locks, no sort, no sequential scan; plan:\n%s", what, strings.TrimSpace(wantIndex), plan)
	}
	// A sort left in the plan (the merge, the counting) costs it past
	// jit_above_cost: compiling it would cost more than the claim.
	if strings.Contains(plan, "JIT:") {
		t.Errorf("%s: want no JIT; plan:\n%s", what, plan)
	}
}

// insertJobs inserts jobs j1 to jn of queue q, created, updated and due a
// second apart from 2026-03-01, each in the state the SQL expression state
// gives for its number i, then runs more.
func insertJobs(t *testing.T, conn *pgx.Conn, n int, state, more string) {
	t.Helper()
	_, err := conn.Exec(tctx(t), `INSERT INTO jobs (id, queue, command, state, attempts, max_retries, backoff_base,
		max_backoff_us, run_at, created_at, updated_at)
		SELECT 'j' || i, 'q', 'true', `+state+`, 1, 3, 2, 3600000000, t, t, t
		FROM generate_series(1, $1::int) AS i, LATERAL (SELECT timestamptz '2026-03-01 00:00:00+00' + i * interval '1 second' AS t) t`, n)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(tctx(t), more); err != nil {
		t.Fatal(err)
	}
}

// TestRetentionUsesFinishedIndex checks that retention (DeleteJobs) finds
// the finished jobs past their time through jobs_finished_updated, an
// index of finished jobs only, with the parameters at hand and in a
// generic plan, on a table of mostly finished jobs, few of them older than
// the cutoff.
func TestRetentionUsesFinishedIndex(t *testing.T) {
	conn := migratedConn(t)
	ctx := tctx(t)
	insertJobs(t, conn, 50000, `CASE WHEN i % 10 = 0 THEN 'pending' WHEN i % 10 = 1 THEN 'dead' ELSE 'completed' END`, `ANALYZE jobs`)
	before := time.Date(2026, 3, 1, 0, 10, 0, 0, time.UTC) // 1 % of the jobs are older
	query := "SELECT count(*) FROM (" + postgres.DeleteMatch + ") m"
	check := func(what, plan string) {
		t.Helper()
		t.Logf("%s:\n%s", what, plan)
		if !strings.Contains(plan, "jobs_finished_updated") || strings.Contains(plan, "Seq Scan") {
			t.Errorf("%s: want a scan of jobs_finished_updated, no sequential scan; plan:\n%s", what, plan)
		}
	}
	check("custom plan", explain(t, conn, "EXPLAIN "+query, before, []string{"completed", "dead", "cancelled"}))
	if _, err := conn.Exec(ctx, "PREPARE retention AS "+query); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, "SET plan_cache_mode = force_generic_plan"); err != nil {
		t.Fatal(err)
	}
	check("generic plan", explain(t, conn, `EXPLAIN EXECUTE retention('2026-03-01 00:10:00+00', '{completed}')`))
}

// TestFinishFindsJobsByID checks that a batch of outcomes does not read a
// worker's jobs once per outcome. With jobs_processing_worker keyed by the
// worker alone the planner joined the batch through it (the processing set
// looks smaller than the primary key), and with one worker holding 64 jobs
// each outcome read all of them: about 2,000 rows for 64 outcomes. It
// checks the generic plan (the one a prepared statement run many times
// settles on, with its batch's size unknown) on a table never analyzed.
func TestFinishFindsJobsByID(t *testing.T) {
	conn := migratedConn(t)
	ctx := tctx(t)
	// 20,000 finished jobs, then 64 held by worker w3, as in a busy 64-slot worker.
	_, err := conn.Exec(ctx, `INSERT INTO jobs (id, queue, command, state, attempts, max_retries, backoff_base,
		max_backoff_us, run_at, created_at, updated_at, worker, lease_until)
		SELECT 'j' || i, 'q', 'true', CASE WHEN i > 20000 THEN 'processing' ELSE 'completed' END, 1, 3, 2, 3600000000,
			t, t, t, 'w3', t + interval '1 day'
		FROM generate_series(1, 20064) AS i, LATERAL (SELECT timestamptz '2026-03-01 00:00:00+00' + i * interval '1 second' AS t) t`)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 3, 2, 0, 0, 0, 0, time.UTC)
	var fs []queue.Finish
	for i := 20001; i <= 20064; i++ {
		fs = append(fs, queue.Finish{JobID: fmt.Sprint("j", i), Worker: "w3", Attempt: 1, State: queue.StateCompleted,
			Attempts: 1, RunAt: now, Now: now,
			Record: queue.Attempt{Number: 1, FinishedAt: now, Outcome: queue.OutcomeSucceeded, Worker: "w3"}})
	}
	// The generic plan, the one the store's prepared statement settles on.
	if _, err := conn.Exec(ctx, "PREPARE finish AS "+postgres.FinishAllSQL); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, "SET plan_cache_mode = force_generic_plan"); err != nil {
		t.Fatal(err)
	}
	args := postgres.FinishArgs(fs)
	params := make([]string, len(args))
	for i := range params {
		params[i] = fmt.Sprint("$", i+1)
	}
	// Simple protocol: the values go into the text, as EXECUTE takes them.
	plan := explain(t, conn, "EXPLAIN EXECUTE finish("+strings.Join(params, ", ")+")", append([]any{pgx.QueryExecModeSimpleProtocol}, args...)...)
	t.Logf("finish of %d jobs:\n%s", len(fs), plan)
	_, update, _ := strings.Cut(plan, "CTE u\n")
	update, _, _ = strings.Cut(update, "CTE moved\n")
	if regexp.MustCompile(`Index Cond: \(worker = \(f_\d+\.worker\)::text\)\n`).MatchString(update) {
		t.Errorf("want each job found by its id, not by its worker; plan of the update:\n%s", update)
	}
}

// TestPruneOutputUsesOutputIndex checks that output pruning finds the
// attempts it empties through attempts_output_finished, an index of the
// attempts that hold output only, with the parameters at hand and in a
// generic plan, on a table where most attempts printed nothing.
func TestPruneOutputUsesOutputIndex(t *testing.T) {
	conn := migratedConn(t)
	ctx := tctx(t)
	insertJobs(t, conn, 50000, `'completed'`, `INSERT INTO attempts (job_id, number, started_at, finished_at, outcome, output)
		SELECT id, 1, updated_at, updated_at, 'succeeded', CASE WHEN substr(id, 2)::int % 20 = 0 THEN '\x6f6b0a'::bytea END FROM jobs;
		ANALYZE attempts`)
	check := func(what, plan string) {
		t.Helper()
		t.Logf("%s:\n%s", what, plan)
		if !strings.Contains(plan, "attempts_output_finished") || strings.Contains(plan, "Seq Scan") {
			t.Errorf("%s: want a scan of attempts_output_finished, no sequential scan; plan:\n%s", what, plan)
		}
	}
	before := time.Date(2026, 3, 1, 0, 10, 0, 0, time.UTC)
	check("custom plan", explain(t, conn, "EXPLAIN "+postgres.PruneMatch, before))
	if _, err := conn.Exec(ctx, "PREPARE prune AS "+postgres.PruneMatch); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, "SET plan_cache_mode = force_generic_plan"); err != nil {
		t.Fatal(err)
	}
	check("generic plan", explain(t, conn, `EXPLAIN EXECUTE prune('2026-03-01 00:10:00+00')`))
}

// TestPruneOutputFindsAttemptsByKey checks that the statement that empties
// a batch of attempts pruning found (500, queue.PrunerConfig's default) looks
// each up by its key (job_id, seq), on a table large enough that reading
// every attempt costs more: the primary key is (job_id, seq) since migration
// 18, and no index leads with seq.
func TestPruneOutputFindsAttemptsByKey(t *testing.T) {
	conn := migratedConn(t)
	insertJobs(t, conn, 200000, `'completed'`, `INSERT INTO attempts (job_id, number, started_at, finished_at, outcome, output)
		SELECT id, 1, updated_at, updated_at, 'succeeded', '\x6f6b0a'::bytea FROM jobs;
		ANALYZE attempts`)
	change := fmt.Sprintf(postgres.PruneChange, postgres.PruneMatch+" LIMIT 500")
	plan := explain(t, conn, "EXPLAIN "+change, time.Date(2026, 3, 1, 6, 0, 0, 0, time.UTC))
	t.Logf("prune:\n%s", plan)
	if strings.Contains(plan, "Seq Scan on attempts") || !strings.Contains(plan, "using attempts_pkey on attempts a") {
		t.Errorf("want each attempt found by its key, not a scan of every attempt; plan:\n%s", plan)
	}
}

// TestListByStateUsesItsClassIndex checks that listing by state, newest
// first, reads only jobs of those states, with the parameters at hand and
// in a generic plan: finished jobs are listed from an index per finished
// state (migration 22: jobs_completed_created, jobs_dead_created,
// jobs_cancelled_created) and the others from jobs_open_created (or, for a
// handful of runnable jobs, another index of runnable ones), a branch per
// state (every state for a listing that names none: no index orders every
// job by time since migration 19), and the states are in the statement's
// text so that the planner can prove an index's predicate from it whatever
// plan it caches. With the states a parameter, the generic plan can use no
// partial index and walks every job.
func TestListByStateUsesItsClassIndex(t *testing.T) {
	conn := migratedConn(t)
	ctx := tctx(t)
	insertJobs(t, conn, 50000, `CASE WHEN i % 1000 = 0 THEN 'dead' WHEN i % 1000 = 3 THEN 'cancelled' WHEN i % 100 = 1 THEN 'pending'
		WHEN i % 100 = 2 THEN 'failed' ELSE 'completed' END`, `ANALYZE jobs`)
	finished := []string{"jobs_completed_created", "jobs_dead_created", "jobs_cancelled_created"}
	for _, c := range []struct {
		states []queue.State
		want   []string // indexes the plan must read
		others []string // indexes it must not read: other states'
	}{
		{[]queue.State{queue.StateDead}, []string{"jobs_dead_created"}, []string{"jobs_open_created", "jobs_completed_created", "jobs_cancelled_created"}},
		{[]queue.State{queue.StatePending}, nil, finished},
		{[]queue.State{queue.StateFailed}, nil, finished},
		// Both classes (retry's completion lists failed and dead jobs): a
		// branch for each, each reading its own index.
		{[]queue.State{queue.StateFailed, queue.StateDead}, []string{"jobs_dead_created"}, []string{"jobs_completed_created", "jobs_cancelled_created"}},
		// Every state (list, the dashboard): a branch for each, merged.
		{nil, append([]string{"jobs_open_created"}, finished...), nil},
		{[]queue.State{queue.StateCompleted, queue.StateDead}, []string{"jobs_completed_created", "jobs_dead_created"}, []string{"jobs_open_created", "jobs_cancelled_created"}},
	} {
		t.Run(fmt.Sprint(c.states), func(t *testing.T) {
			query, args := postgres.ListSQL(queue.ListParams{States: c.states, Limit: 50})
			check := func(what, plan string) {
				t.Helper()
				t.Logf("%s:\n%s", what, plan)
				ok := strings.Contains(plan, "Index Scan") && !strings.Contains(plan, "Seq Scan on jobs") &&
					!strings.Contains(plan, "using jobs_queue_finished ")
				for _, index := range c.others {
					ok = ok && !strings.Contains(plan, "using "+index+" ")
				}
				for _, index := range c.want {
					ok = ok && strings.Contains(plan, "using "+index+" ")
				}
				if !ok {
					t.Errorf("%s: want scans of indexes of the %v jobs' classes only (%v among them); plan:\n%s", what, c.states, c.want, plan)
				}
			}
			check("custom plan", explain(t, conn, "EXPLAIN "+query, args...))
			tx, err := conn.Begin(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer tx.Rollback(ctx)
			if _, err := tx.Exec(ctx, "SET LOCAL plan_cache_mode = force_generic_plan"); err != nil {
				t.Fatal(err)
			}
			if _, err := tx.Exec(ctx, "PREPARE list AS "+query); err != nil {
				t.Fatal(err)
			}
			defer tx.Exec(ctx, "DEALLOCATE list")
			rows, err := tx.Query(ctx, "EXPLAIN EXECUTE list(50)")
			if err != nil {
				t.Fatal(err)
			}
			lines, err := pgx.CollectRows(rows, pgx.RowTo[string])
			if err != nil {
				t.Fatal(err)
			}
			check("generic plan", strings.Join(lines, "\n"))
		})
	}
}

// TestNextRunAtProbesEachQueue checks that an idle worker's question, the
// earliest run time among runnable jobs, reads one entry of
// jobs_runnable_at per queue (a skip scan over the queues, or the named
// ones) and no finished job, and that its answer is the least run_at of
// the runnable jobs outside paused queues: here the paused queue holds the
// earliest.
func TestNextRunAtProbesEachQueue(t *testing.T) {
	conn := migratedConn(t)
	ctx := tctx(t)
	insertJobs(t, conn, 50000, `CASE WHEN i % 10 = 0 THEN 'pending' WHEN i % 10 = 1 THEN 'failed' ELSE 'completed' END`,
		`UPDATE jobs SET queue = CASE WHEN id IN ('j1', 'j10') THEN 'held' WHEN right(id, 2) = '00' THEN 'r' ELSE 'q' END`)
	if _, err := conn.Exec(ctx, `INSERT INTO queue_controls (name, paused) VALUES ('held', true); ANALYZE jobs`); err != nil {
		t.Fatal(err)
	}
	for _, queues := range [][]string{nil, {"r"}, {"q", "r", "held", "none"}} {
		t.Run(fmt.Sprint(queues), func(t *testing.T) {
			query, args := postgres.NextRunSQL(queues)
			plan := explain(t, conn, "EXPLAIN "+query, args...)
			t.Logf("plan:\n%s", plan)
			if !strings.Contains(plan, "using jobs_runnable_at on jobs") || strings.Contains(plan, "Seq Scan on jobs") ||
				strings.Contains(plan, "Sort") {
				t.Errorf("want index probes of jobs_runnable_at, no sequential scan, no sort; plan:\n%s", plan)
			}
			var got, want *time.Time
			if err := conn.QueryRow(ctx, query, args...).Scan(&got); err != nil {
				t.Fatal(err)
			}
			err := conn.QueryRow(ctx, `SELECT min(run_at) FROM jobs WHERE state IN ('pending', 'failed')
				AND queue <> 'held' AND ($1::text[] IS NULL OR queue = ANY($1))`, queues).Scan(&want)
			if err != nil {
				t.Fatal(err)
			}
			if got == nil || want == nil || !got.Equal(*want) {
				t.Errorf("next run time %v, want %v (the earliest outside the paused queue)", got, want)
			}
		})
	}
}

// TestListByQueueUsesQueueIndex checks that listing the finished jobs of a
// rare queue reads that queue's entries of jobs_queue_finished rather than
// every finished job newest first: on 50,000 dead and completed jobs, 50
// of them in the rare queue.
func TestListByQueueUsesQueueIndex(t *testing.T) {
	conn := migratedConn(t)
	insertJobs(t, conn, 50000, `CASE WHEN i % 2 = 0 THEN 'dead' ELSE 'completed' END`,
		`UPDATE jobs SET queue = 'rare' WHERE right(id, 3) = '000'; ANALYZE jobs`)
	for _, states := range [][]queue.State{{queue.StateDead}, {queue.StateCompleted, queue.StateDead}} {
		t.Run(fmt.Sprint(states), func(t *testing.T) {
			query, args := postgres.ListSQL(queue.ListParams{States: states, Queue: "rare", Limit: 50})
			plan := explain(t, conn, "EXPLAIN "+query, args...)
			t.Logf("plan:\n%s", plan)
			if !strings.Contains(plan, "jobs_queue_finished") || strings.Contains(plan, "Seq Scan on jobs") {
				t.Errorf("want the rare queue's entries of jobs_queue_finished, no sequential scan; plan:\n%s", plan)
			}
		})
	}
}
