package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/queuectl/queuectl/queue"
	"github.com/queuectl/queuectl/queue/internal/storekit"
)

const insertJob = `INSERT INTO jobs (id, queue, command, state, priority, attempts, max_retries, timeout_us,
	backoff_base, max_backoff_us, run_at, created_at, updated_at, env, dir, template, scheduled_at, fire_key,
	labels, hooks, unique_key, error)
	VALUES (?1, ?2, ?3, ?20, ?4, 0, ?5, ?6, ?7, ?8, ?9, ?10, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19)`

// insertPlainJob is insertJob for the common job with no environment,
// directory or template: binding values, not SQLite, dominates a bulk
// enqueue, so it binds only the eleven that are set.
const insertPlainJob = `INSERT INTO jobs (id, queue, command, state, priority, attempts, max_retries, timeout_us,
	backoff_base, max_backoff_us, run_at, created_at, updated_at)
	VALUES (?, ?, ?, 'pending', ?, 0, ?, ?, ?, ?, ?, ?, ?10)`

// InsertJobs implements queue.Store. The one writer makes the unique-key
// and dependency checks atomic with the insert; the unique index backs
// the former.
func (s *Store) InsertJobs(ctx context.Context, jobs []*queue.Job) error {
	if len(jobs) == 0 {
		return nil
	}
	// Idle workers are woken as soon as the jobs commit and may claim them
	// while the log is synced: no acknowledgement waits on them.
	err := s.writeThen(ctx, true, func(ctx context.Context, tx *sql.Tx) error {
		var full, plain *sql.Stmt
		var err error
		var aliases storekit.Aliases
		for _, j := range jobs {
			j.ExistingID = ""
			switch {
			case plainJob(j):
				if plain == nil {
					if plain, err = s.stmt(ctx, tx, insertPlainJob); err != nil {
						return err
					}
				}
				_, err = plain.ExecContext(ctx, j.ID, j.Queue, j.Command, j.Priority, j.MaxRetries,
					j.Timeout.Microseconds(), j.BackoffBase, j.MaxBackoff.Microseconds(), toUS(j.RunAt), toUS(j.CreatedAt))
				if isUnique(err) {
					err = fmt.Errorf("%w: %q already exists", queue.ErrDuplicate, j.ID)
				}
				if err == nil {
					s.tally.move(j.Queue, "", queue.StatePending)
				}
			default:
				if full == nil {
					if full, err = s.stmt(ctx, tx, insertJob); err != nil {
						return err
					}
				}
				if storekit.Plain(j) {
					err = execInsert(ctx, full, &s.tally, j, "")
				} else {
					err = storekit.Insert(ctx, insertTx{tx, full, &s.tally}, j, &aliases)
				}
			}
			if err != nil {
				return err
			}
		}
		return nil
	}, s.wake.notify)
	if err != nil {
		return fmt.Errorf("insert jobs: %w", err)
	}
	return nil
}

// insertTx runs storekit.Insert's steps in the write transaction.
type insertTx struct {
	tx     *sql.Tx
	insert *sql.Stmt
	tally  *tally
}

// holdsKey is the condition under which a job (its columns prefixed with
// alias) holds its unique key whatever the window: jobs_unique_key's
// (migration 15), unfinished and not an import's job cancelled as it was
// staged.
func holdsKey(alias string) string {
	return alias + `state NOT IN ('completed', 'dead', 'cancelled') AND NOT (` + alias + `state = 'staged' AND ` +
		alias + `error IS NOT NULL)`
}

func (t insertTx) UniqueHolder(ctx context.Context, key string, since time.Time) (string, bool, error) {
	var id string
	err := t.tx.QueryRowContext(ctx, `SELECT id FROM jobs WHERE unique_key = ?1
		AND (`+holdsKey("")+` OR (?2 > 0 AND updated_at >= ?2))
		ORDER BY updated_at DESC, rowid DESC LIMIT 1`, key, toUSOrZero(since)).Scan(&id)
	if errors.Is(err, sql.ErrNoRows) {
		return "", false, nil
	}
	return id, err == nil, err
}

// DependencyStates leaves out the jobs an import has staged: until it
// commits they are no jobs, to an enqueue as to every reader (an import
// aborted or killed adds none of them).
func (t insertTx) DependencyStates(ctx context.Context, ids []string) (map[string]queue.State, error) {
	return t.states(ctx, `SELECT id, state FROM jobs WHERE id IN (SELECT value FROM json_each(?1)) AND state <> 'staged'`, ids)
}

// states runs query, which selects the id and state of the jobs ids names
// (?1, a JSON array) and reads them by id.
func (t insertTx) states(ctx context.Context, query string, ids []string, args ...any) (map[string]queue.State, error) {
	b, _ := json.Marshal(ids)
	rows, err := t.tx.QueryContext(ctx, query, append([]any{string(b)}, args...)...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := make(map[string]queue.State, len(ids))
	for rows.Next() {
		var id, state string
		if err := rows.Scan(&id, &state); err != nil {
			return nil, err
		}
		out[id] = queue.State(state)
	}
	return out, rows.Err()
}

func (t insertTx) Insert(ctx context.Context, j *queue.Job) (bool, error) {
	err := execInsert(ctx, t.insert, t.tally, j, "")
	if err != nil && j.UniqueKey != "" && strings.Contains(err.Error(), "jobs.unique_key") {
		return false, nil
	}
	return err == nil, err
}

func (t insertTx) InsertDeps(ctx context.Context, j *queue.Job, after []string) error {
	for _, dep := range after {
		if _, err := t.tx.ExecContext(ctx, `INSERT INTO job_deps (job_id, dep_id) VALUES (?, ?)`, j.ID, dep); err != nil {
			return err
		}
	}
	return nil
}

// plainJob reports whether j sets none of the optional columns.
func plainJob(j *queue.Job) bool {
	return len(j.Env) == 0 && j.Dir == "" && j.Template == "" && j.ScheduledAt.IsZero() && len(j.Labels) == 0 &&
		j.Hooks.IsZero() && j.UniqueKey == "" && len(j.After) == 0 && j.State == queue.StatePending
}

// execInsert inserts one job in its initial state and counts it in t;
// fireKey is "" for ad-hoc jobs. A job's updated_at starts equal to its
// created_at.
func execInsert(ctx context.Context, st *sql.Stmt, t *tally, j *queue.Job, fireKey string) error {
	_, err := st.ExecContext(ctx, insertValues(j, fireKey)...)
	if isUnique(err) && !strings.Contains(err.Error(), "jobs.unique_key") {
		return fmt.Errorf("%w: %q already exists", queue.ErrDuplicate, j.ID)
	}
	if err == nil {
		t.move(j.Queue, "", initialState(j))
	}
	return err
}

// insertValues are insertJob's values for j.
func insertValues(j *queue.Job, fireKey string) []any {
	var hooks sql.NullString
	if !j.Hooks.IsZero() {
		hooks = jsonText(j.Hooks)
	}
	return []any{j.ID, j.Queue, j.Command, j.Priority, j.MaxRetries, j.Timeout.Microseconds(),
		j.BackoffBase, j.MaxBackoff.Microseconds(), toUS(j.RunAt), toUS(j.CreatedAt), jsonMap(j.Env),
		nullString(j.Dir), nullString(j.Template), toUSNull(j.ScheduledAt), nullString(fireKey),
		jsonMap(j.Labels), hooks, nullString(j.UniqueKey), nullString(j.Error), string(initialState(j))}
}

// initialState is the state a job is inserted in.
func initialState(j *queue.Job) queue.State {
	if j.State == "" {
		return queue.StatePending
	}
	return j.State
}

// execStaged inserts one job of a bulk import with its import id.
func execStaged(ctx context.Context, st *sql.Stmt, j *queue.Job, importID any) error {
	_, err := st.ExecContext(ctx, append(insertValues(j, ""), importID)...)
	if isUnique(err) && !strings.Contains(err.Error(), "jobs.unique_key") {
		return fmt.Errorf("%w: %q already exists", queue.ErrDuplicate, j.ID)
	}
	return err
}

// jsonMap is m as a JSON object, NULL when empty.
func jsonMap(m map[string]string) sql.NullString {
	if len(m) == 0 {
		return sql.NullString{}
	}
	return jsonText(m)
}

func jsonText(v any) sql.NullString {
	b, _ := json.Marshal(v)
	return sql.NullString{String: string(b), Valid: true}
}
