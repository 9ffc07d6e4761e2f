package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/queuectl/queuectl/queue"
	"github.com/queuectl/queuectl/queue/internal/storekit"
)

// Heartbeat implements queue.Store.
func (s *Store) Heartbeat(ctx context.Context, p queue.HeartbeatParams) (queue.HeartbeatResult, error) {
	var res queue.HeartbeatResult
	ids, _ := json.Marshal(p.Jobs)
	err := s.write(ctx, false, func(ctx context.Context, tx *sql.Tx) error {
		res = queue.HeartbeatResult{}
		var stop int
		err := tx.QueryRowContext(ctx, `UPDATE workers SET heartbeat_at = ? WHERE id = ? RETURNING stop_requested`,
			toUS(p.Now), p.Worker).Scan(&stop)
		if errors.Is(err, sql.ErrNoRows) {
			return queue.ErrNotFound
		}
		if err != nil {
			return err
		}
		res.StopRequested = stop != 0
		if len(p.Jobs) == 0 {
			return nil
		}
		// An expired lease is not renewed: a rescuer may have taken the
		// job, and the worker must stop it (it is reported lost).
		rows, err := tx.QueryContext(ctx, `UPDATE jobs SET lease_until = ?
			WHERE id IN (SELECT value FROM json_each(?)) AND worker = ? AND state = 'processing' AND lease_until > ?
			RETURNING id, cancel_requested`, toUS(p.LeaseUntil), string(ids), p.Worker, toUS(p.Now))
		if err != nil {
			return err
		}
		defer rows.Close()
		renewed := map[string]bool{}
		for rows.Next() {
			var id string
			var cancel int
			if err := rows.Scan(&id, &cancel); err != nil {
				return err
			}
			renewed[id] = cancel != 0
		}
		if err := rows.Err(); err != nil {
			return err
		}
		res.Lost, res.Cancel = queue.LeaseRenewal(p.Jobs, renewed)
		return nil
	})
	return res, storekit.HeartbeatError(p.Worker, err)
}

// RescueCandidates implements queue.Store.
func (s *Store) RescueCandidates(ctx context.Context, p queue.RescueParams) ([]*queue.Job, error) {
	rows, err := s.readDB.QueryContext(ctx, `SELECT `+jobColumns+` FROM jobs
		WHERE state = 'processing' AND (lease_until <= ? OR worker IN (SELECT id FROM workers WHERE host = ? AND boot_id = ?))`,
		toUS(p.Now), p.Host, p.BootID)
	if err != nil {
		return nil, fmt.Errorf("rescue candidates: %w", describe(err))
	}
	jobs, err := scanJobs(rows)
	if err != nil {
		return nil, fmt.Errorf("rescue candidates: %w", describe(err))
	}
	return jobs, nil
}
