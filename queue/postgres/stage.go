package postgres

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/queuectl/queuectl/queue"
	"github.com/queuectl/queuectl/queue/internal/storekit"
)

// An import's chunk that holds jobs with a unique key or dependencies is
// decided job by job, in file order, by storekit.Insert, as enqueueing the
// jobs one at a time would. Asking the server once per job cost a few
// round trips a job (about 1.3 ms). chunkTx instead reads, before the
// chunk, what the decisions need from the stored jobs in two queries (the
// holders of the chunk's unique keys; the states of the jobs it runs
// after, held FOR KEY SHARE as stagedTx holds them), answers
// storekit.Insert from those and from the chunk's jobs decided before, and
// writes the chunk in a few statements: its jobs by COPY into a temporary
// table, then into jobs in one INSERT that skips a unique key another
// session took since the read; the dependencies by COPY.
//
// When that INSERT skips a job (the race above, rare), the decisions after
// it may be wrong: the jobs it inserted (it returns their ids then; an
// insert skipped on its key is never checked against its id, so the
// chunk's ids may name other jobs) are deleted again, in the same
// transaction, and the chunk goes one job at a time (stagedTx), whose
// insert sees the key taken.

// chunkTx implements storekit.InsertTx and storekit.LaterTx for one chunk
// of an import.
type chunkTx struct {
	tx    pgx.Tx
	later *bool
	// stored are the states of the stored (or staged by earlier chunks)
	// jobs the chunk's jobs run after, read once; "" marks an id asked
	// for that names no job.
	stored map[string]queue.State
	// holders are, by unique key, the jobs that may hold it: the stored
	// unfinished one, the stored newest finished one (for a key a job of
	// the chunk holds for a window), then the chunk's, in the order they
	// were added.
	holders map[string][]holder
	// staged are the chunk's jobs decided so far, by id, in their state.
	staged map[string]queue.State
	jobs   []*queue.Job
	deps   [][]any
}

// holder is a job with a unique key, as UniqueHolder weighs it: the one
// updated last holds the key, of two updated at once the one added last
// (seq; a job of the chunk comes after every stored one).
type holder struct {
	id      string
	final   bool
	updated time.Time
	seq     int64
}

var _ storekit.InsertTx = (*chunkTx)(nil)
var _ storekit.LaterTx = (*chunkTx)(nil)

// readChunk reads what deciding jobs needs from the stored jobs.
func readChunk(ctx context.Context, tx pgx.Tx, later *bool, jobs []*queue.Job) (*chunkTx, error) {
	c := &chunkTx{tx: tx, later: later, stored: map[string]queue.State{}, holders: map[string][]holder{},
		staged: make(map[string]queue.State, len(jobs))}
	var keys, windowed, after []string
	for _, j := range jobs {
		if j.UniqueKey != "" {
			keys = append(keys, j.UniqueKey)
			if j.UniqueFor > 0 {
				windowed = append(windowed, j.UniqueKey)
			}
		}
		after = append(after, j.After...)
	}
	if len(keys) > 0 {
		// Per key, the unfinished job (at most one: jobs_unique_key) and,
		// for a key a job of the chunk holds for a window after its
		// holder finished (UniqueFor), the newest finished one: all
		// UniqueHolder can pick. An index lookup each, however many
		// finished jobs had the key.
		slices.Sort(windowed)
		rows, err := tx.Query(ctx, `SELECT unique_key, id, false, updated_at, seq FROM jobs
				WHERE unique_key = ANY($1) AND unique_key IS NOT NULL AND state NOT IN ('completed', 'dead', 'cancelled')
			UNION ALL
			SELECT k.key, h.id, true, h.updated_at, h.seq FROM unnest($2::text[]) AS k (key) CROSS JOIN LATERAL (
				SELECT id, updated_at, seq FROM jobs WHERE unique_key = k.key AND state IN ('completed', 'dead', 'cancelled')
				ORDER BY updated_at DESC, seq DESC LIMIT 1) h`, keys, slices.Compact(windowed))
		if err != nil {
			return nil, fmt.Errorf("read unique keys: %w", err)
		}
		var key string
		var h holder
		if _, err := pgx.ForEachRow(rows, []any{&key, &h.id, &h.final, &h.updated, &h.seq}, func() error {
			c.holders[key] = append(c.holders[key], h)
			return nil
		}); err != nil {
			return nil, fmt.Errorf("read unique keys: %w", err)
		}
		for _, k := range keys {
			if _, ok := c.holders[k]; !ok {
				c.holders[k] = nil // read: no job holds it
			}
		}
	}
	if len(after) > 0 {
		if err := c.readStates(ctx, after); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// readStates reads the states of ids into stored, holding them as
// stagedTx.DependencyStates does.
func (c *chunkTx) readStates(ctx context.Context, ids []string) error {
	states, err := stagedTx{insertTx: insertTx{c.tx}}.DependencyStates(ctx, ids)
	if err != nil {
		return fmt.Errorf("read dependencies: %w", err)
	}
	for _, id := range ids {
		c.stored[id] = states[id] // "" when it names no job
	}
	return nil
}

func (c *chunkTx) Later() { *c.later = true }

func (c *chunkTx) UniqueHolder(ctx context.Context, key string, since time.Time) (string, bool, error) {
	hs, read := c.holders[key]
	if !read { // not one of the chunk's keys: never asked by Insert
		return insertTx{c.tx}.UniqueHolder(ctx, key, since)
	}
	var best *holder
	for i, h := range hs {
		if h.final && (since.IsZero() || h.updated.Before(since)) {
			continue
		}
		if best == nil || h.updated.After(best.updated) || h.updated.Equal(best.updated) && h.seq > best.seq {
			best = &hs[i]
		}
	}
	if best == nil {
		return "", false, nil
	}
	return best.id, true, nil
}

func (c *chunkTx) DependencyStates(ctx context.Context, ids []string) (map[string]queue.State, error) {
	var unread []string
	for _, id := range ids {
		if _, ok := c.staged[id]; ok {
			continue
		}
		if _, ok := c.stored[id]; !ok {
			unread = append(unread, id) // a unique key's holder, named through an alias
		}
	}
	if len(unread) > 0 {
		if err := c.readStates(ctx, unread); err != nil {
			return nil, err
		}
	}
	out := make(map[string]queue.State, len(ids))
	for _, id := range ids {
		if st, ok := c.staged[id]; ok {
			out[id] = st
		} else if st := c.stored[id]; st != "" {
			out[id] = st
		}
	}
	return out, nil
}

func (c *chunkTx) Insert(ctx context.Context, j *queue.Job) (bool, error) {
	if _, ok := c.staged[j.ID]; ok {
		return false, fmt.Errorf("%w: %q already exists", queue.ErrDuplicate, j.ID)
	}
	st := initialState(j)
	c.staged[j.ID] = st
	if j.UniqueKey != "" {
		// After every stored job (seq counts from 1), in the chunk's order.
		seq := math.MaxInt64/2 + int64(len(c.staged))
		c.holders[j.UniqueKey] = append(c.holders[j.UniqueKey], holder{id: j.ID, final: st.Finished(), updated: j.UpdatedAt, seq: seq})
	}
	c.jobs = append(c.jobs, j)
	return true, nil
}

func (c *chunkTx) InsertDeps(ctx context.Context, j *queue.Job, after []string) error {
	for _, dep := range after {
		c.deps = append(c.deps, []any{j.ID, dep})
	}
	return nil
}

// insertChunkJobs moves the jobs of import_chunk into jobs, counted, but
// one whose unique key an unfinished job holds. It returns how many it
// inserted and, when that is fewer than $1, their ids.
var insertChunkJobs = countedInsertSelecting(`INSERT INTO jobs (`+chunkColumns+`) SELECT `+chunkColumns+`
	FROM import_chunk ON CONFLICT (unique_key)
	WHERE unique_key IS NOT NULL AND state NOT IN ('completed', 'dead', 'cancelled') DO NOTHING`,
	"id, ", `count(*), CASE WHEN count(*) < $1 THEN array_agg(id) END`)

// chunkColumns are copyColumns, for a statement.
var chunkColumns = strings.Join(copyColumns, ", ")

// write stores the jobs decided and their dependencies; it reports false,
// having stored nothing, when another session took a unique key of the
// chunk since readChunk (see the top of this file).
func (c *chunkTx) write(ctx context.Context) (bool, error) {
	if len(c.jobs) == 0 {
		return true, nil
	}
	if _, err := c.tx.Exec(ctx, `CREATE TEMP TABLE IF NOT EXISTS import_chunk ON COMMIT DROP AS
		SELECT `+chunkColumns+` FROM jobs WITH NO DATA`); err != nil {
		return false, fmt.Errorf("stage chunk: %w", err)
	}
	if _, err := c.tx.CopyFrom(ctx, pgx.Identifier{"import_chunk"}, copyColumns, pgx.CopyFromSlice(len(c.jobs), func(i int) ([]any, error) {
		return insertArgs(c.jobs[i], ""), nil
	})); err != nil {
		return false, fmt.Errorf("stage chunk: %w", err)
	}
	var n int
	var inserted []string
	err := c.tx.QueryRow(ctx, insertChunkJobs, len(c.jobs)).Scan(&n, &inserted)
	if id, ok := takenID(err); ok {
		return false, fmt.Errorf("%w: %q already exists", queue.ErrDuplicate, id)
	}
	if isUnique(err) { // a server whose messages are in another language
		return false, fmt.Errorf("%w: an id of the chunk is taken: %w", queue.ErrDuplicate, err)
	}
	if err != nil {
		return false, fmt.Errorf("insert chunk: %w", err)
	}
	if _, err := c.tx.Exec(ctx, `TRUNCATE import_chunk`); err != nil {
		return false, fmt.Errorf("insert chunk: %w", err)
	}
	if n < len(c.jobs) {
		// The delete's trigger takes back the counts the insert added.
		if _, err := c.tx.Exec(ctx, `DELETE FROM jobs WHERE id = ANY($1)`, inserted); err != nil {
			return false, fmt.Errorf("take back chunk: %w", err)
		}
		return false, nil
	}
	if len(c.deps) > 0 {
		if _, err := c.tx.CopyFrom(ctx, pgx.Identifier{"job_deps"}, []string{"job_id", "dep_id"}, pgx.CopyFromRows(c.deps)); err != nil {
			return false, fmt.Errorf("insert dependencies: %w", err)
		}
	}
	return true, nil
}
