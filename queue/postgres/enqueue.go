package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/queuectl/queuectl/queue"
	"github.com/queuectl/queuectl/queue/internal/storekit"
)

const insertJob = `INSERT INTO jobs (id, queue, command, state, priority, attempts, max_retries, timeout_us,
	backoff_base, max_backoff_us, run_at, created_at, updated_at, env, dir, template, scheduled_at, fire_key,
	labels, hooks, unique_key, error)
	VALUES ($1, $2, $3, $21, $4, 0, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20)`

// insertArgs are insertJob's arguments for one job in its initial state;
// fireKey is "" for ad-hoc jobs.
func insertArgs(j *queue.Job, fireKey string) []any {
	var hooks []byte
	if !j.Hooks.IsZero() {
		hooks, _ = json.Marshal(j.Hooks)
	}
	return []any{j.ID, j.Queue, j.Command, j.Priority, j.MaxRetries, j.Timeout.Microseconds(), j.BackoffBase,
		j.MaxBackoff.Microseconds(), j.RunAt, j.CreatedAt, j.UpdatedAt, jsonMap(j.Env), nullString(j.Dir),
		nullString(j.Template), nullTime(j.ScheduledAt), nullString(fireKey), jsonMap(j.Labels), hooks,
		nullString(j.UniqueKey), nullString(j.Error), string(initialState(j))}
}

// initialState is the state a job is inserted in: its own, pending when
// it has none.
func initialState(j *queue.Job) queue.State {
	if j.State == "" {
		return queue.StatePending
	}
	return j.State
}

// jsonMap is m as a JSON object, NULL when empty.
func jsonMap(m map[string]string) []byte {
	if len(m) == 0 {
		return nil
	}
	b, _ := json.Marshal(m)
	return b
}

// insertCountedJob is insertJob that counts the job it adds (a statement
// on its own; insertJob leaves the count to an addJobCounts).
var insertCountedJob = countedInsert(insertJob)

// insertShapedJob is insertCountedJob for a job with a unique key: when an
// unfinished job holds the key (or one is being inserted, which it waits
// for), it inserts nothing and returns 0.
var insertShapedJob = countedInsert(insertJob + ` ON CONFLICT (unique_key)
	WHERE unique_key IS NOT NULL AND state NOT IN ('completed', 'dead', 'cancelled') DO NOTHING`)

// insertAttempts is how many times InsertJobs makes a transaction that the
// server rolls back for a deadlock or a serialization failure before it
// returns queue.ErrRolledBack.
const insertAttempts = 4

// InsertJobs implements queue.Store. Plain jobs go in one pipelined batch,
// one transaction; a taken id rolls back the whole batch. A batch
// with a job that has a unique key or dependencies goes one statement at a
// time, so that each job sees the ones before it.
//
// Two batches that take the same unique keys (or ids) in opposite orders
// deadlock, and the server rolls one back: nothing of it was kept, so it
// is made again, from the start, once the other has gone ahead (up to
// insertAttempts times). Callers never see a deadlock a retry resolves.
func (s *Store) InsertJobs(ctx context.Context, jobs []*queue.Job) error {
	if len(jobs) == 0 {
		return nil
	}
	plain := true
	for _, j := range jobs {
		plain = plain && storekit.Plain(j)
	}
	large := rowsSize(jobs) > patientAbove
	var err error
	for attempt := 1; ; attempt++ {
		for _, j := range jobs {
			j.ExistingID = "" // a rolled-back attempt may have set it
		}
		err = s.insertOnce(ctx, jobs, plain, large)
		if err = transient(err); !errors.Is(err, queue.ErrRolledBack) || attempt == insertAttempts || !pauseBeforeRetry(ctx, attempt) {
			break
		}
	}
	if err != nil {
		return fmt.Errorf("insert jobs: %w", err)
	}
	s.wake.broadcast()
	return nil
}

// patientAbove is the size of a batch's rows over which its connection
// goes without the TCP user timeout (patient) while it is sent: a batch
// that waits for a lock (a job of an import in progress with the same id
// or unique key) while more of it is still to be sent closes the server's
// receive window, which the timeout would take for a lost connection. A
// smaller batch fits in the sockets' first buffers (16 KiB sent, about
// 64 KiB of window).
const patientAbove = 32 << 10

// insertOnce makes InsertJobs' transaction once; a large batch (over
// patientAbove) is sent without the TCP user timeout.
func (s *Store) insertOnce(ctx context.Context, jobs []*queue.Job, plain, large bool) error {
	c, err := s.pool.Acquire(ctx)
	if err != nil {
		return err
	}
	defer c.Release()
	if large {
		defer patient(c.Conn().PgConn().Conn(), s.userTimeout)()
	}
	if plain {
		// A pipelined batch is one implicit transaction (it ends at the
		// batch's one Sync): all or nothing, without BEGIN and COMMIT
		// round trips.
		return sendInserts(ctx, c, jobs, s.channel)
	}
	return pgx.BeginFunc(ctx, c, func(tx pgx.Tx) error { return s.insertShaped(ctx, tx, jobs) })
}

// rowsSize is about the bytes jobs take on the wire.
func rowsSize(jobs []*queue.Job) int {
	n := 0
	for _, j := range jobs {
		n += 256 + len(j.ID) + len(j.Command) + len(j.Dir) + len(j.UniqueKey) + queue.EnvSize(j.Env) + queue.EnvSize(j.Labels)
	}
	return n
}

// pauseBeforeRetry waits a short, random while before the attempt after
// attempt, so that two transactions rolled back together do not meet
// again in step. It reports false when ctx ended first.
func pauseBeforeRetry(ctx context.Context, attempt int) bool {
	d := time.Duration(attempt) * (5*time.Millisecond + rand.N(20*time.Millisecond))
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// sendInserts inserts pending jobs as one pipelined batch, counts them in
// one statement, then notifies channel unless it is "".
func sendInserts(ctx context.Context, tx conn, jobs []*queue.Job, channel string) error {
	b := &pgx.Batch{}
	for _, j := range jobs {
		b.Queue(insertJob, insertArgs(j, "")...)
	}
	b.Queue(addJobCounts, jobCounts(jobs)...)
	if channel != "" {
		b.Queue(notifySQL, channel)
	}
	br := tx.SendBatch(ctx, b)
	defer br.Close()
	for _, j := range jobs {
		if _, err := br.Exec(); err != nil {
			if isUnique(err) {
				return fmt.Errorf("%w: %q already exists", queue.ErrDuplicate, j.ID)
			}
			return err
		}
	}
	if _, err := br.Exec(); err != nil {
		return fmt.Errorf("count jobs: %w", err)
	}
	if channel != "" {
		if _, err := br.Exec(); err != nil {
			return err
		}
	}
	return br.Close()
}

// duplicateID names the job whose id a unique violation is about.
func duplicateID(err error, j *queue.Job) error {
	if isUnique(err) {
		return fmt.Errorf("%w: %q already exists", queue.ErrDuplicate, j.ID)
	}
	return err
}

func (s *Store) insertShaped(ctx context.Context, tx pgx.Tx, jobs []*queue.Job) error {
	var aliases storekit.Aliases
	for _, j := range jobs {
		if err := storekit.Insert(ctx, insertTx{tx}, j, &aliases); err != nil {
			return err
		}
	}
	_, err := tx.Exec(ctx, notifySQL, s.channel)
	return err
}

// insertTx runs storekit.Insert's steps in one transaction.
type insertTx struct{ tx pgx.Tx }

func (t insertTx) UniqueHolder(ctx context.Context, key string, since time.Time) (string, bool, error) {
	var id string
	err := t.tx.QueryRow(ctx, `SELECT id FROM jobs WHERE unique_key = $1
		AND (state NOT IN ('completed', 'dead', 'cancelled') OR ($2::timestamptz IS NOT NULL AND updated_at >= $2))
		ORDER BY updated_at DESC, seq DESC LIMIT 1`, key, nullTime(since)).Scan(&id)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", false, nil
	}
	return id, err == nil, err
}

// DependencyStates locks the dependencies FOR SHARE: a finish of one of
// them (a row update) waits for this transaction, and then sees the job
// it inserts; a finish that came first makes this wait and read its
// outcome. In id order, so that two enqueuers never deadlock.
func (t insertTx) DependencyStates(ctx context.Context, ids []string) (map[string]queue.State, error) {
	return t.states(ctx, `SELECT id, state FROM jobs WHERE id = ANY($1) ORDER BY id FOR SHARE`, ids)
}

// states runs query, which selects the id and state of the jobs $1 names,
// and reads them by id.
func (t insertTx) states(ctx context.Context, query string, ids []string) (map[string]queue.State, error) {
	rows, err := t.tx.Query(ctx, query, ids)
	if err != nil {
		return nil, err
	}
	out := make(map[string]queue.State, len(ids))
	var id, state string
	_, err = pgx.ForEachRow(rows, []any{&id, &state}, func() error {
		out[id] = queue.State(state)
		return nil
	})
	return out, err
}

func (t insertTx) Insert(ctx context.Context, j *queue.Job) (bool, error) {
	var n int
	if err := t.tx.QueryRow(ctx, insertShapedJob, insertArgs(j, "")...).Scan(&n); err != nil {
		return false, duplicateID(err, j)
	}
	return n == 1, nil
}

func (t insertTx) InsertDeps(ctx context.Context, j *queue.Job, after []string) error {
	_, err := t.tx.Exec(ctx, `INSERT INTO job_deps (job_id, dep_id) SELECT $1, unnest($2::text[])`, j.ID, after)
	return err
}
