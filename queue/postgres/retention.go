package postgres

// Retention's side of the store: deleting finished jobs past their age
// (with their attempts, out of the run-time histograms) and dropping old
// output, in batches whose rows are locked in the order retries and
// discards lock them.

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/queuectl/queuectl/queue"
)

// deleteMatch selects the jobs DeleteJobs deletes: $1 before, $2 states.
// The states are finished ones (DeletableStates); saying so in the text as
// well lets the planner use jobs_finished_updated, whose predicate it is,
// in a generic plan too.
const (
	deleteCond  = `state IN ('completed', 'dead', 'cancelled') AND state = ANY($2) AND updated_at < $1`
	deleteMatch = `SELECT id FROM jobs WHERE ` + deleteCond
)

// lockInIDOrder is a statement that locks the jobs of the ids in
// parameter ids that still meet cond, in id order: the order lockJobs
// takes for retries and discards. Statements that lock several jobs' rows
// in the order they happen to find them (retention by age, pruning by end
// time) can each hold a row another waits for, and PostgreSQL then aborts
// one of them; so those find their jobs' ids first, unlocked, and lock
// them with this. A row another transaction changed meanwhile is locked
// only if it still meets cond. (Locking through "id IN (the finding
// query)" instead lets the planner join every job that meets cond to a
// batch of a few hundred.)
func lockInIDOrder(ids, cond string) string {
	return `SELECT id FROM jobs WHERE id = ANY(` + ids + `) AND ` + cond + ` ORDER BY id FOR UPDATE`
}

// limited is query with at most limit rows (0: all).
func limited(query string, limit int) string {
	if limit > 0 {
		query += fmt.Sprintf(" LIMIT %d", limit)
	}
	return query
}

// idsOf runs match, a query of job ids, with at most limit rows (0: all).
func idsOf(ctx context.Context, q conn, match string, limit int, args ...any) ([]string, error) {
	rows, err := q.Query(ctx, limited(match, limit), args...)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, pgx.RowTo[string])
}

// DeleteJobs implements queue.Store. History goes with its job (ON DELETE
// CASCADE), and out of the run-time histograms: the jobs are locked first,
// so that no attempt is added to them between the two.
func (s *Store) DeleteJobs(ctx context.Context, p queue.DeleteParams) (int, error) {
	states, err := queue.DeletableStates(p.States)
	if err != nil {
		return 0, fmt.Errorf("delete jobs: %w", err)
	}
	var n int
	if p.DryRun {
		n, err = s.batch(ctx, deleteMatch, "", p.Limit, true, p.Before, stateStrings(states))
	} else {
		n, err = s.deleteJobs(ctx, p.Limit, p.Before, stateStrings(states))
	}
	if err != nil {
		return 0, fmt.Errorf("delete jobs: %w", err)
	}
	return n, nil
}

// deleteJobs deletes at most limit (0: all) of the jobs deleteMatch
// selects, in one transaction, and takes their attempts out of the
// run-time histograms.
func (s *Store) deleteJobs(ctx context.Context, limit int, args ...any) (int, error) {
	var n int
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		ids, err := idsOf(ctx, tx, deleteMatch, limit, args...)
		if err != nil || len(ids) == 0 {
			return err
		}
		rows, err := tx.Query(ctx, lockInIDOrder("$3", deleteCond), append(args, ids)...)
		if err != nil {
			return err
		}
		if ids, err = pgx.CollectRows(rows, pgx.RowTo[string]); err != nil || len(ids) == 0 {
			return err
		}
		if err := forgetAttempts(ctx, tx, ids); err != nil {
			return err
		}
		tag, err := tx.Exec(ctx, `DELETE FROM jobs WHERE id = ANY($1)`, ids)
		n = int(tag.RowsAffected())
		return err
	})
	return n, err
}

// forgetRuns takes the attempts of the jobs $1 out of run_slots, computing
// their slots and buckets as countFinished (finish.go) does. It locks
// the rows in key order, as countFinished does, so that the two cannot
// deadlock: hence an upsert, which never inserts (the rows exist) or, if
// it did, would insert a row that forgetAttempts deletes at once.
var forgetRuns = `INSERT INTO run_slots AS r (span, slot, queue, class, le_us, n, min_us, max_us)
	SELECT s.span, date_trunc(s.span, a.finished_at AT TIME ZONE 'UTC') AT TIME ZONE 'UTC', j.queue,
		CASE WHEN a.outcome IN ('succeeded', 'interrupted') THEN a.outcome ELSE 'failed' END,
		(SELECT min(le_us) FROM run_buckets WHERE le_us >= ` + runMicros("a.started_at", "a.finished_at") + `),
		-count(*), 0, 0
	FROM job_attempts a JOIN jobs j ON j.id = a.job_id CROSS JOIN (VALUES ('minute'), ('hour')) s(span)
	WHERE a.job_id = ANY($1)
	GROUP BY 1, 2, 3, 4, 5 ORDER BY 1, 2, 3, 4, 5
	ON CONFLICT (span, slot, queue, class, le_us) DO UPDATE SET n = r.n + excluded.n
	RETURNING span, slot, n`

// forgetAttempts takes the attempts of jobs about to be deleted out of the
// run-time histograms, and deletes the histogram rows that count nothing
// any more.
func forgetAttempts(ctx context.Context, tx pgx.Tx, ids []string) error {
	rows, err := tx.Query(ctx, forgetRuns, ids)
	if err != nil {
		return err
	}
	var spans []string
	var slots []time.Time
	var span string
	var slot time.Time
	var n int64
	_, err = pgx.ForEachRow(rows, []any{&span, &slot, &n}, func() error {
		if n <= 0 {
			spans, slots = append(spans, span), append(slots, slot)
		}
		return nil
	})
	if err != nil || len(spans) == 0 {
		return err
	}
	_, err = tx.Exec(ctx, `DELETE FROM run_slots WHERE n <= 0 AND (span, slot) IN (SELECT * FROM unnest($1::text[], $2::timestamptz[]))`,
		spans, slots)
	return err
}

// pruneMatch finds the attempts whose output pruning empties, through
// attempts_output_finished (migration 16): those that ended before $1 and
// still hold output.
const pruneMatch = `SELECT job_id, seq FROM attempts WHERE finished_at < $1 AND output IS NOT NULL`

// pruneChange empties the attempts pruneMatch finds, each found by its
// key (job_id, seq: migration 18). A join, not "(job_id, seq) IN": the
// planner expects a few rows from a row-valued IN and reads every attempt
// to match them. The rows are locked in key order first, the order in
// which deleting their jobs (retention, discards: jobs in id order, each
// job's attempts by the foreign key's cascade) takes them, so that the two
// cannot deadlock. The row is checked again as the update finds it, since
// a concurrent prune (each service runs its own) may have emptied it first.
const pruneChange = `UPDATE attempts a SET dropped = a.dropped + length(a.output), output = NULL
	FROM (SELECT l.job_id, l.seq FROM attempts l JOIN (%s) f ON l.job_id = f.job_id AND l.seq = f.seq
		ORDER BY l.job_id, l.seq FOR UPDATE OF l) m
	WHERE a.job_id = m.job_id AND a.seq = m.seq AND a.output IS NOT NULL`

// pruneFinalMatch and pruneFinalChange do the same for the final attempts
// kept on finished jobs' rows, through jobs_output_finished (migration 21).
// The update takes the ids pruneFinalMatch found ($2) and locks their rows
// in id order first (lockInIDOrder: a retry of a dead job or retention may
// hold some of them), checking each again as it is locked: a concurrent
// prune may have emptied one, or a retry and a new run may have given it
// a newer attempt.
const (
	pruneFinalCond  = `finished_at < $1 AND last_output IS NOT NULL`
	pruneFinalMatch = `SELECT id FROM jobs WHERE ` + pruneFinalCond
)

var pruneFinalChange = `UPDATE jobs j SET last_dropped = coalesce(j.last_dropped, 0) + length(j.last_output), last_output = NULL
	FROM (` + lockInIDOrder("$2", pruneFinalCond) + `) m WHERE j.id = m.id AND j.last_output IS NOT NULL AND j.finished_at < $1`

// PruneOutput implements queue.Store: the attempts first, then the final
// attempts on the jobs' rows, at most p.Limit (0: all) in all. When the
// second statement fails, the count is what the first one emptied.
func (s *Store) PruneOutput(ctx context.Context, p queue.PruneOutputParams) (int, error) {
	n, err := s.batch(ctx, pruneMatch, pruneChange, p.Limit, p.DryRun, p.Before)
	if err != nil {
		return 0, fmt.Errorf("prune output: %w", err)
	}
	if p.Limit > 0 && n >= p.Limit {
		return n, nil
	}
	m, err := s.pruneFinal(ctx, max(p.Limit-n, 0), p.DryRun, p.Before)
	if err != nil {
		return n, fmt.Errorf("prune output: %w", err)
	}
	return n + m, nil
}

// pruneFinal empties the output of at most limit (0: all) final attempts
// kept on job rows that ended before before, or only counts them.
func (s *Store) pruneFinal(ctx context.Context, limit int, dryRun bool, before time.Time) (int, error) {
	if dryRun {
		return s.batch(ctx, pruneFinalMatch, "", limit, true, before)
	}
	ids, err := idsOf(ctx, s.pool, pruneFinalMatch, limit, before)
	if err != nil || len(ids) == 0 {
		return 0, err
	}
	tag, err := s.pool.Exec(ctx, pruneFinalChange, before, ids)
	return int(tag.RowsAffected()), err
}

// batch runs change (a statement with %s for the rows) on at most limit
// rows that match selects (0: all), or only counts them.
func (s *Store) batch(ctx context.Context, match, change string, limit int, dryRun bool, args ...any) (int, error) {
	match = limited(match, limit)
	if dryRun {
		var n int
		err := s.pool.QueryRow(ctx, `SELECT count(*) FROM (`+match+`) m`, args...).Scan(&n)
		return n, err
	}
	tag, err := s.pool.Exec(ctx, fmt.Sprintf(change, match), args...)
	if err != nil {
		return 0, err
	}
	return int(tag.RowsAffected()), nil
}
