package postgres

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/queuectl/queuectl/queue"
)

const importJob = `INSERT INTO jobs (id, queue, command, state, priority, attempts, max_retries, timeout_us,
	backoff_base, max_backoff_us, run_at, created_at, updated_at, started_at, finished_at, exit_code, error,
	worker, lease_until, cancel_requested, env, dir, template, scheduled_at, uncharged, labels, hooks, unique_key)
	VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20, $21, $22, $23, $24,
		$25, $26, $27, $28)`

const importDep = `INSERT INTO job_deps (job_id, dep_id) VALUES ($1, $2)`

const importAttempt = `INSERT INTO attempts (job_id, number, started_at, finished_at, exit_code, signal, outcome,
	worker, error, output, dropped) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)`

// countImported counts the imported attempts of the jobs $1, as finishAll
// counts the attempts it records (the final SELECT only ends the WITH).
var countImported = `WITH a AS MATERIALIZED (
		SELECT j.queue, x.outcome, x.started_at, x.finished_at FROM attempts x JOIN jobs j ON j.id = x.job_id WHERE j.id = ANY($1)),
	` + timedAttempts + `,
	` + countFinished + `
	SELECT count(*) FROM a`

// ImportJobs stores jobs as they are in another store, in any state, with
// their history and outputs, all in one transaction: all or none. A taken
// id fails the whole call with ErrDuplicate. Jobs go in the order given,
// which becomes their insertion order (the tie-break of equal times).
func (s *Store) ImportJobs(ctx context.Context, recs []queue.JobRecord) error {
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		for start := 0; start < len(recs); start += 500 {
			b := &pgx.Batch{}
			part := recs[start:min(start+500, len(recs))]
			ids := make([]string, len(part))
			for i, r := range part {
				ids[i] = r.Job.ID
				b.Queue(importJob, importArgs(r.Job)...)
				for _, dep := range r.Job.After {
					b.Queue(importDep, r.Job.ID, dep)
				}
				for _, a := range r.History {
					b.Queue(importAttempt, r.Job.ID, a.Number, nullTime(a.StartedAt), a.FinishedAt, a.ExitCode,
						nullString(a.Signal), string(a.Outcome), nullString(a.Worker), nullString(a.Error), a.Output, a.Dropped)
				}
			}
			jobs := make([]*queue.Job, len(part))
			for i, r := range part {
				jobs[i] = r.Job
			}
			b.Queue(addJobCounts, jobCounts(jobs)...)
			if err := sendImport(ctx, tx, b, part); err != nil {
				return err
			}
			if _, err := tx.Exec(ctx, countImported, ids); err != nil {
				return fmt.Errorf("count attempts: %w", err)
			}
		}
		_, err := tx.Exec(ctx, notifySQL, s.channel)
		return err
	})
	if err != nil {
		return fmt.Errorf("import jobs: %w", err)
	}
	s.wake.broadcast()
	return nil
}

func importArgs(j *queue.Job) []any {
	var hooks []byte
	if !j.Hooks.IsZero() {
		hooks, _ = json.Marshal(j.Hooks)
	}
	return []any{j.ID, j.Queue, j.Command, string(j.State), j.Priority, j.Attempts, j.MaxRetries, j.Timeout.Microseconds(),
		j.BackoffBase, j.MaxBackoff.Microseconds(), j.RunAt, j.CreatedAt, j.UpdatedAt, nullTime(j.StartedAt),
		nullTime(j.FinishedAt), j.ExitCode, nullString(j.Error), nullString(j.Worker), nullTime(j.LeaseUntil),
		j.CancelRequested, jsonMap(j.Env), nullString(j.Dir), nullString(j.Template), nullTime(j.ScheduledAt), j.Uncharged,
		jsonMap(j.Labels), hooks, nullString(j.UniqueKey)}
}

// sendImport runs one batch, which ends with the count of its jobs
// (addJobCounts), and names the job whose id is taken.
func sendImport(ctx context.Context, tx pgx.Tx, b *pgx.Batch, part []queue.JobRecord) error {
	br := tx.SendBatch(ctx, b)
	defer br.Close()
	for _, r := range part {
		for range 1 + len(r.Job.After) + len(r.History) {
			if _, err := br.Exec(); err != nil {
				if isUnique(err) {
					return fmt.Errorf("%w: %q already exists", queue.ErrDuplicate, r.Job.ID)
				}
				return fmt.Errorf("job %q: %w", r.Job.ID, err)
			}
		}
	}
	if _, err := br.Exec(); err != nil {
		return fmt.Errorf("count jobs: %w", err)
	}
	return br.Close()
}
