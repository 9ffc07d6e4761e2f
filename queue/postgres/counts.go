package postgres

// countMoves is a CTE (to put in a WITH after a CTE named moved) that adds
// to job_totals the jobs moved took from one state to another: moved has a
// row per job with its queue, was (its state before) and became (after).
// One upsert per queue and state, into rows of this backend's own (shard =
// its process id, as the job-count triggers of migration 11 do for inserts
// and deletes), locked in key order. Every statement that changes a job's
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
