package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/queuectl/queuectl/queue"
	"github.com/queuectl/queuectl/queue/internal/storekit"
)

// renewLeases renews the leases of the jobs $2 that worker $3 holds, and
// answers each renewed job with its cancel request and each job whose row
// another transaction holds with held = true. It takes the rows with SKIP
// LOCKED: waiting for them could deadlock with a batch of finishes that
// locks them in another order, and a job whose row is busy (its outcome
// being written, most likely) is asked again at the next heartbeat. An
// expired lease is not renewed: a rescuer may have taken the job, and the
// worker must stop it (it is reported lost).
const renewLeases = `WITH l AS MATERIALIZED (SELECT id FROM jobs WHERE id = ANY($2) FOR UPDATE SKIP LOCKED),
	u AS (
		UPDATE jobs j SET lease_until = now() + ($1::timestamptz - $4::timestamptz) FROM l
		WHERE j.id = l.id AND j.worker = $3 AND j.state = 'processing' AND j.lease_until > now()
		RETURNING j.id, j.cancel_requested)
	SELECT id, cancel_requested, false FROM u
	UNION ALL
	SELECT id, false, true FROM jobs WHERE id = ANY($2) AND id NOT IN (SELECT id FROM l)`

// Heartbeat implements queue.Store.
func (s *Store) Heartbeat(ctx context.Context, p queue.HeartbeatParams) (queue.HeartbeatResult, error) {
	var res queue.HeartbeatResult
	// A worker transaction: it commits without waiting for the WAL flush (worktx.go).
	err := pgx.BeginTxFunc(ctx, s.pool, asyncTx, func(tx pgx.Tx) error {
		res = queue.HeartbeatResult{}
		// Leases and heartbeats run on the database's clock
		// (queue.DatabaseClock): only the lease's length comes from the worker.
		err := tx.QueryRow(ctx, `UPDATE workers SET heartbeat_at = now() WHERE id = $1 RETURNING stop_requested`,
			p.Worker).Scan(&res.StopRequested)
		if errors.Is(err, pgx.ErrNoRows) {
			return queue.ErrNotFound
		}
		if err != nil {
			return err
		}
		if len(p.Jobs) == 0 {
			return nil
		}
		rows, err := tx.Query(ctx, renewLeases, p.LeaseUntil, p.Jobs, p.Worker, p.Now)
		if err != nil {
			return err
		}
		renewed := map[string]bool{}
		busy := map[string]bool{}
		var id string
		var cancel, held bool
		_, err = pgx.ForEachRow(rows, []any{&id, &cancel, &held}, func() error {
			if held {
				busy[id] = true
			} else {
				renewed[id] = cancel
			}
			return nil
		})
		if err != nil {
			return err
		}
		var asked []string
		for _, id := range p.Jobs {
			if busy[id] {
				res.Busy = append(res.Busy, id)
			} else {
				asked = append(asked, id)
			}
		}
		res.Lost, res.Cancel = queue.LeaseRenewal(asked, renewed)
		return nil
	})
	return res, storekit.HeartbeatError(p.Worker, err)
}

// DatabaseNow implements queue.DatabaseClock: the server's now().
func (s *Store) DatabaseNow(ctx context.Context) (time.Time, error) {
	var now time.Time
	if err := s.pool.QueryRow(ctx, `SELECT now()`).Scan(&now); err != nil {
		return time.Time{}, fmt.Errorf("database clock: %w", err)
	}
	return now.UTC(), nil
}

// RescueCandidates implements queue.Store.
func (s *Store) RescueCandidates(ctx context.Context, p queue.RescueParams) ([]*queue.Job, error) {
	jobs, err := s.queryJobs(ctx, `SELECT `+allJobColumns+` FROM jobs
		WHERE state = 'processing' AND (lease_until <= $1 OR worker IN (SELECT id FROM workers WHERE host = $2 AND boot_id = $3))
		ORDER BY seq`, p.Now, p.Host, p.BootID)
	if err != nil {
		return nil, fmt.Errorf("rescue candidates: %w", err)
	}
	return jobs, nil
}
