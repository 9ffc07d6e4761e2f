package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/queuectl/queuectl/queue"
	"github.com/queuectl/queuectl/queue/internal/storekit"
)

// lockApply serialises, for the rest of tx, the transactions that write a
// file's queues and recurring jobs to this schema: each deletes the rows
// its file does not declare (locking them in the order it scans them)
// and upserts the others, so two services applying different files at
// once would otherwise lock the same rows in opposite orders.
func lockApply(ctx context.Context, tx pgx.Tx) error {
	_, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtextextended('queuectl-apply:' || current_schema(), 0))`)
	return err
}

// ApplyQueues implements queue.Store.
func (s *Store) ApplyQueues(ctx context.Context, qs []queue.QueueConfig) error {
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if err := lockApply(ctx, tx); err != nil {
			return err
		}
		return applyQueues(ctx, tx, qs)
	})
	if err != nil {
		return fmt.Errorf("apply queues: %w", err)
	}
	return nil
}

// applyQueues makes the declared queues exactly qs in tx, upserted in name
// order. Upserts rather than a delete of every row and inserts: a service
// starting at the same time may apply the same queues, and its inserts
// would collide with these (read committed); in name order, so that two
// files listing queues in other orders do not deadlock.
func applyQueues(ctx context.Context, tx pgx.Tx, qs []queue.QueueConfig) error {
	qs = slices.Clone(qs)
	slices.SortFunc(qs, func(a, b queue.QueueConfig) int { return strings.Compare(a.Name, b.Name) })
	names := make([]string, len(qs))
	for i, q := range qs {
		names[i] = q.Name
	}
	b := &pgx.Batch{}
	b.Queue(`DELETE FROM queues WHERE name <> ALL($1)`, names)
	for _, q := range qs {
		var maxBackoff, timeout *int64
		if q.Retry.MaxBackoff != nil {
			v := q.Retry.MaxBackoff.Microseconds()
			maxBackoff = &v
		}
		if q.Retry.Timeout != nil {
			v := q.Retry.Timeout.Microseconds()
			timeout = &v
		}
		var hooks []byte
		if !q.Retry.Hooks.IsZero() {
			hooks, _ = json.Marshal(q.Retry.Hooks)
		}
		b.Queue(`INSERT INTO queues (name, concurrency, max_retries, backoff_base, max_backoff_us, timeout_us, hooks)
			VALUES ($1, $2, $3, $4, $5, $6, $7)
			ON CONFLICT (name) DO UPDATE SET concurrency = excluded.concurrency, max_retries = excluded.max_retries,
				backoff_base = excluded.backoff_base, max_backoff_us = excluded.max_backoff_us,
				timeout_us = excluded.timeout_us, hooks = excluded.hooks`, q.Name, q.Concurrency, q.Retry.MaxRetries, q.Retry.BackoffBase,
			maxBackoff, timeout, hooks)
	}
	return tx.SendBatch(ctx, b).Close()
}

// ApplyConfig implements queue.Store: one transaction.
func (s *Store) ApplyConfig(ctx context.Context, c queue.ConfigApply) ([]queue.QueueControl, error) {
	if err := c.Check(); err != nil {
		return nil, fmt.Errorf("apply config: %w", err)
	}
	var before []queue.QueueControl
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if err := lockApply(ctx, tx); err != nil {
			return err
		}
		// Controls first, each row in name order, as claims and queue
		// set lock them; then queues, then templates.
		before = nil
		for _, name := range c.LimitedNames() {
			first := true // the first update of name finds what was stored
			for _, u := range c.Limits {
				if !slices.Contains(u.Names, name) {
					continue
				}
				one := u
				one.Names = []string{name}
				was, err := updateControls(ctx, tx, one)
				if err != nil {
					return fmt.Errorf("update queue controls: %w", err)
				}
				if first {
					before, first = append(before, was...), false
				}
			}
		}
		if err := applyQueues(ctx, tx, c.Queues); err != nil {
			return fmt.Errorf("apply queues: %w", err)
		}
		if err := applyTemplates(ctx, tx, c.Templates, c.Now); err != nil {
			return fmt.Errorf("apply templates: %w", err)
		}
		// A raised limit may make work runnable.
		_, err := tx.Exec(ctx, notifySQL, s.channel)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("apply config: %w", err)
	}
	s.controlsChanged()
	return before, nil
}

// Queues implements queue.Store.
func (s *Store) Queues(ctx context.Context) ([]queue.QueueConfig, error) {
	// Simple protocol: one round trip, nothing to prepare (a command reads
	// this once per process).
	rows, err := s.pool.Query(ctx, `SELECT name, concurrency, max_retries, backoff_base, max_backoff_us, timeout_us, hooks
		FROM queues ORDER BY name`, pgx.QueryExecModeSimpleProtocol)
	if err != nil {
		return nil, fmt.Errorf("queues: %w", err)
	}
	defer rows.Close()
	var out []queue.QueueConfig
	for rows.Next() {
		var q queue.QueueConfig
		var maxBackoff, timeout *int64
		var hooks []byte
		if err := rows.Scan(&q.Name, &q.Concurrency, &q.Retry.MaxRetries, &q.Retry.BackoffBase, &maxBackoff, &timeout, &hooks); err != nil {
			return nil, fmt.Errorf("queues: %w", err)
		}
		if len(hooks) > 0 {
			if err := json.Unmarshal(hooks, &q.Retry.Hooks); err != nil {
				return nil, fmt.Errorf("queues: %s: hooks: %w", q.Name, err)
			}
		}
		if maxBackoff != nil {
			v := time.Duration(*maxBackoff) * time.Microsecond
			q.Retry.MaxBackoff = &v
		}
		if timeout != nil {
			v := time.Duration(*timeout) * time.Microsecond
			q.Retry.Timeout = &v
		}
		out = append(out, q)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("queues: %w", err)
	}
	return out, nil
}

// ApplyTemplates implements queue.Store.
func (s *Store) ApplyTemplates(ctx context.Context, ts []*queue.Template, now time.Time) error {
	for _, t := range ts {
		if _, err := t.Definition(); err != nil {
			return fmt.Errorf("apply templates: %s: %w", t.Name, err)
		}
	}
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if err := lockApply(ctx, tx); err != nil {
			return err
		}
		return applyTemplates(ctx, tx, ts, now)
	})
	if err != nil {
		return fmt.Errorf("apply templates: %w", err)
	}
	return nil
}

// applyTemplates makes the stored templates exactly ts in tx, upserted in
// name order (two services applying files that list jobs in other orders
// do not deadlock).
func applyTemplates(ctx context.Context, tx pgx.Tx, ts []*queue.Template, now time.Time) error {
	ts = slices.Clone(ts)
	slices.SortFunc(ts, func(a, b *queue.Template) int { return strings.Compare(a.Name, b.Name) })
	names := make([]string, len(ts))
	defs := make([]string, len(ts))
	for i, t := range ts {
		def, err := t.Definition()
		if err != nil {
			return fmt.Errorf("%s: %w", t.Name, err)
		}
		names[i], defs[i] = t.Name, string(def)
	}
	b := &pgx.Batch{}
	b.Queue(`DELETE FROM templates WHERE name <> ALL($1)`, names)
	for i := range ts {
		// A changed definition keeps its cursor: slots already handled
		// are not fired again. A new schedule or time zone, or a job
		// enabled again, starts from now (rescheduled): the slots
		// before it were never this schedule's to miss. A job enabled
		// again drops a run that waited (overlap = queue) since before
		// it was disabled, for the same reason.
		b.Queue(`INSERT INTO templates (name, definition, cursor, updated_at) VALUES ($1, $2, $3, $3)
			ON CONFLICT (name) DO UPDATE SET definition = excluded.definition,
				cursor = CASE WHEN (templates.definition::jsonb->>'schedule') IS DISTINCT FROM (excluded.definition::jsonb->>'schedule')
					OR (templates.definition::jsonb->>'time_zone') IS DISTINCT FROM (excluded.definition::jsonb->>'time_zone')
					OR `+enabledAgainSQL+`
					THEN GREATEST(templates.cursor, excluded.cursor) ELSE templates.cursor END,
				pending_trigger = CASE WHEN `+enabledAgainSQL+` AND coalesce(templates.pending_kind, 'cron') = 'cron'
					THEN NULL ELSE templates.pending_trigger END,
				pending_kind = CASE WHEN `+enabledAgainSQL+` AND coalesce(templates.pending_kind, 'cron') = 'cron'
					THEN NULL ELSE templates.pending_kind END,
				updated_at = CASE WHEN templates.definition = excluded.definition
					THEN templates.updated_at ELSE excluded.updated_at END`,
			names[i], defs[i], now)
	}
	return tx.SendBatch(ctx, b).Close()
}

// enabledAgainSQL holds, in an upsert of a template, when a disabled
// template is enabled again.
const enabledAgainSQL = `((templates.definition::jsonb->>'enabled') = 'false' AND (excluded.definition::jsonb->>'enabled') = 'true')`

// Templates implements queue.Store.
func (s *Store) Templates(ctx context.Context) ([]*queue.Template, error) {
	rows, err := s.pool.Query(ctx, `SELECT name, definition, cursor, pending_trigger, pending_kind, updated_at
		FROM templates ORDER BY name`)
	if err != nil {
		return nil, fmt.Errorf("templates: %w", err)
	}
	var out []*queue.Template
	var name, def string
	var cursor, updated time.Time
	var pending *time.Time
	var kind *string
	_, err = pgx.ForEachRow(rows, []any{&name, &def, &cursor, &pending, &kind, &updated}, func() error {
		t, err := queue.TemplateFromDefinition(name, []byte(def))
		if err != nil {
			return fmt.Errorf("template %s: %w", name, err)
		}
		t.Cursor, t.PendingTrigger, t.UpdatedAt = cursor.UTC(), utc(pending), updated.UTC()
		t.PendingKind = queue.FireKind(str(kind))
		out = append(out, t)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("templates: %w", err)
	}
	for _, t := range out {
		j, err := scanJob(s.pool.QueryRow(ctx, `SELECT `+allJobColumns+` FROM jobs WHERE template = $1
			ORDER BY created_at DESC, seq DESC LIMIT 1`, t.Name))
		if err != nil && !errors.Is(err, pgx.ErrNoRows) {
			return nil, fmt.Errorf("template %s: last job: %w", t.Name, err)
		}
		t.LastJob = j
		j, err = scanJob(s.pool.QueryRow(ctx, `SELECT `+allJobColumns+` FROM jobs WHERE template = $1
			AND state IN ('completed', 'dead', 'cancelled') ORDER BY created_at DESC, seq DESC LIMIT 1`, t.Name))
		if err != nil && !errors.Is(err, pgx.ErrNoRows) {
			return nil, fmt.Errorf("template %s: last finished job: %w", t.Name, err)
		}
		t.LastFinished = j
	}
	return out, nil
}

// FireTemplate implements queue.Store.
func (s *Store) FireTemplate(ctx context.Context, p queue.FireParams) (queue.FireResult, error) {
	var res queue.FireResult
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		var err error
		res, err = storekit.Fire(ctx, fireTx{s, tx}, p)
		return err
	})
	if err != nil {
		return res, fmt.Errorf("fire template: %w", err)
	}
	if res.Fired {
		s.wake.broadcast()
	}
	return res, nil
}

// fireTx runs storekit.Fire's steps in one transaction. LockTemplate locks
// the template's row, so schedulers firing the same template on many hosts
// take turns: the later one finds the job of the slot (by its fire key) and
// inserts none.
type fireTx struct {
	s  *Store
	tx pgx.Tx
}

func (f fireTx) LockTemplate(ctx context.Context, name string) (time.Time, bool, error) {
	var pending *time.Time
	err := f.tx.QueryRow(ctx, `SELECT pending_trigger FROM templates WHERE name = $1 FOR UPDATE`, name).Scan(&pending)
	if errors.Is(err, pgx.ErrNoRows) {
		return time.Time{}, false, nil
	}
	return utc(pending), err == nil, err
}

func (f fireTx) MoveCursor(ctx context.Context, name string, cursor time.Time) error {
	_, err := f.tx.Exec(ctx, `UPDATE templates SET cursor = greatest(cursor, $1) WHERE name = $2`, cursor, name)
	return err
}

func (f fireTx) JobByFireKey(ctx context.Context, key string) (string, bool, error) {
	var id string
	err := f.tx.QueryRow(ctx, `SELECT id FROM jobs WHERE fire_key = $1`, key).Scan(&id)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", false, nil
	}
	return id, err == nil, err
}

func (f fireTx) IDTaken(ctx context.Context, id string) (bool, error) {
	var taken bool
	err := f.tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM jobs WHERE id = $1)`, id).Scan(&taken)
	return taken, err
}

func (f fireTx) HasJobIn(ctx context.Context, template string, states []queue.State) (bool, error) {
	var id string
	err := f.tx.QueryRow(ctx, `SELECT id FROM jobs WHERE template = $1 AND state = ANY($2) LIMIT 1`,
		template, stateStrings(states)).Scan(&id)
	if errors.Is(err, pgx.ErrNoRows) {
		return false, nil
	}
	return err == nil, err
}

func (f fireTx) SetWaiting(ctx context.Context, name string, slot time.Time, kind queue.FireKind) error {
	_, err := f.tx.Exec(ctx, `UPDATE templates SET pending_trigger = $1, pending_kind = $2 WHERE name = $3`,
		slot, string(kind), name)
	return err
}

func (f fireTx) ClearWaiting(ctx context.Context, name string) error {
	_, err := f.tx.Exec(ctx, `UPDATE templates SET pending_trigger = NULL, pending_kind = NULL WHERE name = $1`, name)
	return err
}

func (f fireTx) InsertJob(ctx context.Context, j *queue.Job, fireKey string) error {
	if _, err := f.tx.Exec(ctx, insertCountedJob, insertArgs(j, fireKey)...); err != nil {
		if isUnique(err) {
			return fmt.Errorf("%w: %q already exists", queue.ErrDuplicate, j.ID)
		}
		return err
	}
	_, err := f.tx.Exec(ctx, notifySQL, f.s.channel)
	return err
}
