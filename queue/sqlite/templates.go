package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/queuectl/queuectl/queue"
	"github.com/queuectl/queuectl/queue/internal/storekit"
)

// ApplyQueues implements queue.Store.
func (s *Store) ApplyQueues(ctx context.Context, qs []queue.QueueConfig) error {
	err := s.write(ctx, true, func(ctx context.Context, tx *sql.Tx) error { return applyQueues(ctx, tx, qs) })
	if err != nil {
		return fmt.Errorf("apply queues: %w", err)
	}
	return nil
}

// applyQueues replaces the declared queues with qs in tx.
func applyQueues(ctx context.Context, tx *sql.Tx, qs []queue.QueueConfig) error {
	if _, err := tx.ExecContext(ctx, `DELETE FROM queues`); err != nil {
		return err
	}
	for _, q := range qs {
		var maxBackoff, timeout sql.NullInt64
		if q.Retry.MaxBackoff != nil {
			maxBackoff = sql.NullInt64{Int64: q.Retry.MaxBackoff.Microseconds(), Valid: true}
		}
		if q.Retry.Timeout != nil {
			timeout = sql.NullInt64{Int64: q.Retry.Timeout.Microseconds(), Valid: true}
		}
		var base sql.NullFloat64
		if q.Retry.BackoffBase != nil {
			base = sql.NullFloat64{Float64: *q.Retry.BackoffBase, Valid: true}
		}
		var hooks sql.NullString
		if !q.Retry.Hooks.IsZero() {
			hooks = jsonText(q.Retry.Hooks)
		}
		_, err := tx.ExecContext(ctx, `INSERT INTO queues (name, concurrency, max_retries, backoff_base, max_backoff_us, timeout_us, hooks)
			VALUES (?, ?, ?, ?, ?, ?, ?)`, q.Name, q.Concurrency, nullInt(q.Retry.MaxRetries), base, maxBackoff, timeout, hooks)
		if err != nil {
			return err
		}
	}
	return nil
}

// ApplyConfig implements queue.Store: one write transaction.
func (s *Store) ApplyConfig(ctx context.Context, c queue.ConfigApply) ([]queue.QueueControl, error) {
	if err := c.Check(); err != nil {
		return nil, fmt.Errorf("apply config: %w", err)
	}
	var before []queue.QueueControl
	err := s.write(ctx, true, func(ctx context.Context, tx *sql.Tx) error {
		names, _ := json.Marshal(c.LimitedNames())
		rows, err := tx.QueryContext(ctx, `SELECT `+controlColumns+` FROM queue_controls
			WHERE name IN (SELECT value FROM json_each(?)) ORDER BY name`, string(names))
		if err != nil {
			return err
		}
		if before, err = scanControls(rows); err != nil {
			return err
		}
		if err := applyQueues(ctx, tx, c.Queues); err != nil {
			return fmt.Errorf("apply queues: %w", err)
		}
		for _, u := range c.Limits {
			if err := updateControls(ctx, tx, u); err != nil {
				return fmt.Errorf("update queue controls: %w", err)
			}
		}
		if err := applyTemplates(ctx, tx, c.Templates, c.Now); err != nil {
			return fmt.Errorf("apply templates: %w", err)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("apply config: %w", err)
	}
	// A raised limit may make work runnable.
	s.wake.notify()
	return before, nil
}

// Queues implements queue.Store.
func (s *Store) Queues(ctx context.Context) ([]queue.QueueConfig, error) {
	rows, err := s.readDB.QueryContext(ctx, `SELECT name, concurrency, max_retries, backoff_base, max_backoff_us, timeout_us, hooks
		FROM queues ORDER BY name`)
	if err != nil {
		return nil, fmt.Errorf("queues: %w", describe(err))
	}
	defer rows.Close()
	var out []queue.QueueConfig
	for rows.Next() {
		var q queue.QueueConfig
		var retries, maxBackoff, timeout sql.NullInt64
		var base sql.NullFloat64
		var hooks sql.NullString
		if err := rows.Scan(&q.Name, &q.Concurrency, &retries, &base, &maxBackoff, &timeout, &hooks); err != nil {
			return nil, fmt.Errorf("queues: %w", err)
		}
		if hooks.Valid {
			if err := json.Unmarshal([]byte(hooks.String), &q.Retry.Hooks); err != nil {
				return nil, fmt.Errorf("queues: %s: hooks: %w", q.Name, err)
			}
		}
		if retries.Valid {
			v := int(retries.Int64)
			q.Retry.MaxRetries = &v
		}
		if base.Valid {
			q.Retry.BackoffBase = &base.Float64
		}
		if maxBackoff.Valid {
			v := time.Duration(maxBackoff.Int64) * time.Microsecond
			q.Retry.MaxBackoff = &v
		}
		if timeout.Valid {
			v := time.Duration(timeout.Int64) * time.Microsecond
			q.Retry.Timeout = &v
		}
		out = append(out, q)
	}
	return out, rows.Err()
}

// ApplyTemplates implements queue.Store.
func (s *Store) ApplyTemplates(ctx context.Context, ts []*queue.Template, now time.Time) error {
	err := s.write(ctx, true, func(ctx context.Context, tx *sql.Tx) error { return applyTemplates(ctx, tx, ts, now) })
	if err != nil {
		return fmt.Errorf("apply templates: %w", err)
	}
	return nil
}

// applyTemplates makes the stored templates exactly ts in tx.
func applyTemplates(ctx context.Context, tx *sql.Tx, ts []*queue.Template, now time.Time) error {
	names, _ := json.Marshal(templateNames(ts))
	if _, err := tx.ExecContext(ctx, `DELETE FROM templates WHERE name NOT IN (SELECT value FROM json_each(?))`, string(names)); err != nil {
		return err
	}
	for _, t := range ts {
		def, err := t.Definition()
		if err != nil {
			return err
		}
		// A changed definition keeps its cursor: slots already handled
		// are not fired again. A new schedule or time zone, or a job
		// enabled again, starts from now (rescheduled): the slots
		// before it were never this schedule's to miss (rescheduleSQL).
		// A job enabled again drops a slot's run that waited (overlap =
		// queue) since before it was disabled, for the same reason; a
		// run triggered by hand stays: someone asked for it.
		_, err = tx.ExecContext(ctx, `INSERT INTO templates (name, definition, cursor, updated_at) VALUES (?, ?, ?, ?)
			ON CONFLICT (name) DO UPDATE SET definition = excluded.definition,
				cursor = CASE WHEN `+rescheduleSQL+` THEN max(cursor, excluded.cursor) ELSE cursor END,
				pending_trigger = CASE WHEN `+enabledAgainSQL+` AND coalesce(pending_kind, 'cron') = 'cron'
					THEN NULL ELSE pending_trigger END,
				pending_kind = CASE WHEN `+enabledAgainSQL+` AND coalesce(pending_kind, 'cron') = 'cron'
					THEN NULL ELSE pending_kind END,
				updated_at = CASE WHEN definition = excluded.definition THEN updated_at ELSE excluded.updated_at END`,
			t.Name, string(def), toUS(now), toUS(now))
		if err != nil {
			return err
		}
	}
	return nil
}

// rescheduleSQL holds, in an upsert of a template, when the new definition
// fires at other times than the stored one: its schedule or time zone
// changed, or it was disabled and is enabled again.
const rescheduleSQL = `(json_extract(definition, '$.schedule') IS NOT json_extract(excluded.definition, '$.schedule')
	OR json_extract(definition, '$.time_zone') IS NOT json_extract(excluded.definition, '$.time_zone')
	OR ` + enabledAgainSQL + `)`

// enabledAgainSQL holds, in an upsert of a template, when a disabled
// template is enabled again.
const enabledAgainSQL = `(json_extract(definition, '$.enabled') = 0 AND json_extract(excluded.definition, '$.enabled') = 1)`

func templateNames(ts []*queue.Template) []string {
	names := make([]string, len(ts))
	for i, t := range ts {
		names[i] = t.Name
	}
	return names
}

// Templates implements queue.Store.
func (s *Store) Templates(ctx context.Context) ([]*queue.Template, error) {
	rows, err := s.readDB.QueryContext(ctx, `SELECT name, definition, cursor, pending_trigger, pending_kind, updated_at
		FROM templates ORDER BY name`)
	if err != nil {
		return nil, fmt.Errorf("templates: %w", describe(err))
	}
	var out []*queue.Template
	for rows.Next() {
		var name, def string
		var cursor, updated int64
		var pending sql.NullInt64
		var kind sql.NullString
		if err := rows.Scan(&name, &def, &cursor, &pending, &kind, &updated); err != nil {
			rows.Close()
			return nil, fmt.Errorf("templates: %w", err)
		}
		t, err := queue.TemplateFromDefinition(name, []byte(def))
		if err != nil {
			rows.Close()
			return nil, fmt.Errorf("template %s: %w", name, err)
		}
		t.Cursor, t.PendingTrigger, t.UpdatedAt = fromUS(cursor), fromUSNull(pending), fromUS(updated)
		t.PendingKind = queue.FireKind(kind.String)
		out = append(out, t)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("templates: %w", err)
	}
	for _, t := range out {
		j, err := scanJob(s.readDB.QueryRowContext(ctx, `SELECT `+jobColumns+` FROM jobs WHERE template = ?
			ORDER BY created_at DESC, rowid DESC LIMIT 1`, t.Name))
		if err != nil && !errors.Is(err, sql.ErrNoRows) {
			return nil, fmt.Errorf("template %s: last job: %w", t.Name, describe(err))
		}
		t.LastJob = j
		j, err = scanJob(s.readDB.QueryRowContext(ctx, `SELECT `+jobColumns+` FROM jobs WHERE template = ?
			AND state IN ('completed', 'dead', 'cancelled') ORDER BY created_at DESC, rowid DESC LIMIT 1`, t.Name))
		if err != nil && !errors.Is(err, sql.ErrNoRows) {
			return nil, fmt.Errorf("template %s: last finished job: %w", t.Name, describe(err))
		}
		t.LastFinished = j
	}
	return out, nil
}

// FireTemplate implements queue.Store.
func (s *Store) FireTemplate(ctx context.Context, p queue.FireParams) (queue.FireResult, error) {
	var res queue.FireResult
	// A manual trigger acknowledges a user's request: sync it fully.
	err := s.write(ctx, p.Kind == queue.FireManual, func(ctx context.Context, tx *sql.Tx) error {
		var err error
		res, err = storekit.Fire(ctx, fireTx{s, tx}, p)
		return err
	})
	if err != nil {
		return res, fmt.Errorf("fire template: %w", err)
	}
	if res.Fired {
		s.wake.notify()
	}
	return res, nil
}

// fireTx runs storekit.Fire's steps in one write transaction, which holds
// the database's only write lock: fires of the same template take turns.
type fireTx struct {
	s  *Store
	tx *sql.Tx
}

func (f fireTx) LockTemplate(ctx context.Context, name string) (time.Time, bool, error) {
	var pending sql.NullInt64
	err := f.tx.QueryRowContext(ctx, `SELECT pending_trigger FROM templates WHERE name = ?`, name).Scan(&pending)
	if errors.Is(err, sql.ErrNoRows) {
		return time.Time{}, false, nil
	}
	return fromUSNull(pending), err == nil, err
}

func (f fireTx) MoveCursor(ctx context.Context, name string, cursor time.Time) error {
	_, err := f.tx.ExecContext(ctx, `UPDATE templates SET cursor = max(cursor, ?) WHERE name = ?`, toUS(cursor), name)
	return err
}

func (f fireTx) JobByFireKey(ctx context.Context, key string) (string, bool, error) {
	var id string
	err := f.tx.QueryRowContext(ctx, `SELECT id FROM jobs WHERE fire_key = ?`, key).Scan(&id)
	if errors.Is(err, sql.ErrNoRows) {
		return "", false, nil
	}
	return id, err == nil, err
}

func (f fireTx) IDTaken(ctx context.Context, id string) (bool, error) {
	var taken bool
	err := f.tx.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM jobs WHERE id = ?)`, id).Scan(&taken)
	return taken, err
}

func (f fireTx) HasJobIn(ctx context.Context, template string, states []queue.State) (bool, error) {
	args := []any{template}
	for _, st := range states {
		args = append(args, string(st))
	}
	var id string
	err := f.tx.QueryRowContext(ctx, `SELECT id FROM jobs WHERE template = ? AND state IN (`+placeholders(len(states))+`) LIMIT 1`,
		args...).Scan(&id)
	if errors.Is(err, sql.ErrNoRows) {
		return false, nil
	}
	return err == nil, err
}

func (f fireTx) SetWaiting(ctx context.Context, name string, slot time.Time, kind queue.FireKind) error {
	_, err := f.tx.ExecContext(ctx, `UPDATE templates SET pending_trigger = ?, pending_kind = ? WHERE name = ?`,
		toUS(slot), string(kind), name)
	return err
}

func (f fireTx) ClearWaiting(ctx context.Context, name string) error {
	_, err := f.tx.ExecContext(ctx, `UPDATE templates SET pending_trigger = NULL, pending_kind = NULL WHERE name = ?`, name)
	return err
}

func (f fireTx) InsertJob(ctx context.Context, j *queue.Job, fireKey string) error {
	st, err := f.s.stmt(ctx, f.tx, insertJob)
	if err != nil {
		return err
	}
	return execInsert(ctx, st, &f.s.tally, j, fireKey)
}
