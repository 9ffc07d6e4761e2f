package postgres

import "github.com/queuectl/queuectl/queue"

// countMoves is a CTE (to put in a WITH after a CTE named moved) that adds
// to job_totals the jobs moved took from one state to another: moved has a
// row per job with its queue, was (its state before) and became (after).
// One upsert per queue and state, into rows of this backend's own (shard =
// its process id, as the job-count trigger of migration 11 does for
// deletes), locked in key order. Every statement that changes a job's
// state counts this way (migration 14).
const countMoves = `moves_counted AS (
		INSERT INTO job_totals AS t (queue, state, shard, n)
		SELECT queue, state, pg_backend_pid(), sum(n) FROM (
			SELECT queue, was AS state, -count(*) AS n FROM moved WHERE was <> became GROUP BY 1, 2
			UNION ALL
			SELECT queue, became, count(*) FROM moved WHERE was <> became GROUP BY 1, 2) m
		GROUP BY queue, state HAVING sum(n) <> 0 ORDER BY queue, state
		ON CONFLICT (queue, state, shard) DO UPDATE SET n = t.n + excluded.n)`

// countedUpdate makes update, an UPDATE of jobs that returns each changed
// job's queue, was and became, count its moves (countMoves); the statement
// returns how many jobs it changed.
func countedUpdate(update string) string {
	return `WITH moved AS (` + update + `),
	` + countMoves + `
	SELECT count(*) FROM moved`
}

// countedInsert makes insert, an INSERT INTO jobs, count the jobs it adds
// by queue and state into job_totals, in the same statement (migration 20);
// the statement returns how many jobs it inserted (none when ON CONFLICT
// skipped the row).
func countedInsert(insert string) string { return countedInsertSelecting(insert, "", "count(*)") }

// countedInsertSelecting is countedInsert returning sel, an expression over
// the rows inserted: their queue and state, and the columns extra lists
// (each followed by a comma; none on an enqueue's path).
func countedInsertSelecting(insert, extra, sel string) string {
	return `WITH inserted AS (` + insert + ` RETURNING ` + extra + `queue, state),
	inserts_counted AS (
		INSERT INTO job_totals AS t (queue, state, shard, n)
		SELECT queue, state, pg_backend_pid(), count(*) FROM inserted GROUP BY 1, 2 ORDER BY 1, 2
		ON CONFLICT (queue, state, shard) DO UPDATE SET n = t.n + excluded.n)
	SELECT ` + sel + ` FROM inserted`
}

// addJobCounts adds to job_totals jobs that statements of the same
// transaction inserted without counting them (a pipelined batch, a COPY):
// $1 queues, $2 states and $3 numbers, from jobCounts.
const addJobCounts = `INSERT INTO job_totals AS t (queue, state, shard, n)
	SELECT q, s, pg_backend_pid(), n FROM unnest($1::text[], $2::text[], $3::bigint[]) AS c (q, s, n) ORDER BY q, s
	ON CONFLICT (queue, state, shard) DO UPDATE SET n = t.n + excluded.n`

// jobCounts counts jobs by queue and the state they are stored in
// (initialState): addJobCounts' arguments.
func jobCounts(jobs []*queue.Job) []any {
	type key struct{ queue, state string }
	at := map[key]int{}
	var queues, states []string
	var ns []int64
	for _, j := range jobs {
		k := key{j.Queue, string(initialState(j))}
		i, ok := at[k]
		if !ok {
			i = len(ns)
			at[k] = i
			queues, states, ns = append(queues, k.queue), append(states, k.state), append(ns, 0)
		}
		ns[i]++
	}
	return []any{queues, states, ns}
}
