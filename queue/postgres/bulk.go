package postgres

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/queuectl/queuectl/queue"
	"github.com/queuectl/queuectl/queue/internal/storekit"
)

// Bulk imports (enqueue --file) on PostgreSQL are one transaction fed a
// chunk at a time: PostgreSQL locks rows, not the database, so an open
// import holds back no claim, heartbeat or other enqueue, and its jobs stay
// invisible to every other session until Commit. A process that dies
// mid-import drops its connection and the server rolls the transaction
// back: all or nothing, with no recovery step. The transaction keeps one
// pool connection for the length of the import (the one exception to "no
// method holds a connection between calls").
//
// A chunk's COPY runs while the caller reads and checks the next chunk
// (the server's work and the client's overlap); the next Stage, Commit or
// Abort waits for it first, so the transaction is never used by two
// goroutines. Memory is two chunks: the one being copied and the one
// being read.
//
// A chunk holding a job with a unique key or dependencies is decided job
// by job by storekit.Insert instead, so each sees the jobs staged before
// it, from what two queries read before the chunk, and is written in a few
// statements (chunkTx, stage.go). The jobs it runs after are read without
// holding them against a finish (FOR KEY SHARE only keeps them from being
// deleted): a finish must not wait for a long import. Instead Commit
// settles the import's waiting jobs against their dependencies as they are
// then, holding those FOR SHARE for the moment of the commit
// (storekit.SettleImported), as an enqueue does. A job may also name one
// the import stages later: it is staged waiting, and Commit first checks
// that every job the import's jobs run after exists and that they do not
// wait for each other (storekit.CheckLater).

type bulkImport struct {
	s    *Store
	tx   pgx.Tx
	done bool
	// chunks runs each chunk's COPY while the caller reads the next.
	chunks storekit.Chunks
	// waiting: some job with dependencies was staged; their ids are in
	// import_waiting, a temporary table dropped at commit (the commit
	// settles those of them that wait).
	waiting bool
	// aliases are the jobs not staged because their unique key was
	// held, for the jobs after them in later chunks.
	aliases storekit.Aliases
	// later: a job was staged after a job not stored or staged yet
	// (storekit.LaterTx); Commit checks the import's dependencies.
	later bool
	// chunkRead, when not nil, runs between a shaped chunk's reads and
	// its decisions: tests put another session's enqueue there.
	chunkRead func()
}

var (
	_ queue.Import       = (*bulkImport)(nil)
	_ queue.ImportsAlone = (*Store)(nil)
)

// BeginImport implements queue.Store. The import holds the schema's
// import lock shared: imports run side by side, but not beside one begun
// with BeginImportAlone.
func (s *Store) BeginImport(ctx context.Context) (queue.Import, error) {
	return s.beginImport(ctx, `SELECT pg_advisory_xact_lock_shared(`+importLock+`)`)
}

// BeginImportAlone implements queue.ImportsAlone: the import holds the
// schema's import lock alone, so it waits for the imports in progress,
// and imports begun after it wait for it (the server grants the lock in
// the order it was asked for).
func (s *Store) BeginImportAlone(ctx context.Context) (queue.Import, error) {
	return s.beginImport(ctx, `SELECT pg_advisory_xact_lock(`+importLock+`)`)
}

// importLock is the key of the schema's import lock.
const importLock = `hashtextextended('queuectl-import:' || current_schema(), 0)`

func (s *Store) beginImport(ctx context.Context, lock string) (queue.Import, error) {
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return nil, fmt.Errorf("begin import: %w", err)
	}
	tx = importTx{tx, patient(tx.Conn().PgConn().Conn(), s.userTimeout)}
	if _, err := tx.Exec(ctx, lock); err != nil {
		tx.Rollback(context.WithoutCancel(ctx))
		return nil, fmt.Errorf("begin import: lock: %w", err)
	}
	return &bulkImport{s: s, tx: tx}, nil
}

// importTx is an import's transaction, whose connection is without its TCP
// user timeout (patient) until the transaction ends.
type importTx struct {
	pgx.Tx
	restore func()
}

func (t importTx) Commit(ctx context.Context) error {
	t.restore()
	return t.Tx.Commit(ctx)
}

func (t importTx) Rollback(ctx context.Context) error {
	t.restore()
	return t.Tx.Rollback(ctx)
}

// ImportIsOneTransaction implements queue.OneTransactionImports.
func (s *Store) ImportIsOneTransaction() bool { return true }

// Stage implements queue.Import.
func (b *bulkImport) Stage(ctx context.Context, jobs []*queue.Job) error {
	if b.done {
		return errors.New("stage jobs: the import has ended")
	}
	return transient(b.chunks.Stage(ctx, jobs, func(ctx context.Context, jobs []*queue.Job) error {
		return copyJobs(ctx, b.tx, jobs)
	}, b.stageShaped))
}

// copyColumns are the columns copyJobs writes, in insertArgs' order.
var copyColumns = []string{"id", "queue", "command", "priority", "max_retries", "timeout_us", "backoff_base",
	"max_backoff_us", "run_at", "created_at", "updated_at", "env", "dir", "template", "scheduled_at", "fire_key",
	"labels", "hooks", "unique_key", "error", "state"}

// copyJobs stores plain jobs with COPY, the fastest way into a table, and
// counts them. An id taken by a stored job, one staged before or one
// earlier in the chunk fails the COPY, which aborts the transaction; the
// error names the id as the server's message does (no query checks the
// ids first: that cost a tenth of the import).
func copyJobs(ctx context.Context, tx pgx.Tx, jobs []*queue.Job) error {
	_, err := tx.CopyFrom(ctx, pgx.Identifier{"jobs"}, copyColumns, pgx.CopyFromSlice(len(jobs), func(i int) ([]any, error) {
		return insertArgs(jobs[i], ""), nil
	}))
	if id, ok := takenID(err); ok {
		return fmt.Errorf("%w: %q already exists", queue.ErrDuplicate, id)
	}
	if isUnique(err) { // a server whose messages are in another language
		return fmt.Errorf("%w: an id of the chunk is taken: %w", queue.ErrDuplicate, err)
	}
	if err != nil {
		return err
	}
	if _, err := tx.Exec(ctx, addJobCounts, jobCounts(jobs)...); err != nil {
		return fmt.Errorf("count jobs: %w", err)
	}
	return nil
}

// takenID is the job id a unique violation of jobs_pkey names in its
// detail: "Key (id)=(ID) already exists." in English, the same key
// between other words in the server's other languages (lc_messages), so
// the id is what lies between "(id)=(" and the detail's last ")".
func takenID(err error) (string, bool) {
	var pe *pgconn.PgError
	if !errors.As(err, &pe) || pe.Code != "23505" || pe.ConstraintName != "jobs_pkey" {
		return "", false
	}
	_, rest, ok := strings.Cut(pe.Detail, "(id)=(")
	end := strings.LastIndexByte(rest, ')')
	if !ok || end < 0 {
		return "", false
	}
	return rest[:end], true
}

// stageShaped stages a chunk that holds jobs with a unique key or
// dependencies, each job seeing those before it (chunkTx, in stage.go),
// and notes the ones with dependencies.
func (b *bulkImport) stageShaped(ctx context.Context, jobs []*queue.Job) error {
	c, err := readChunk(ctx, b.tx, &b.later, jobs)
	if err != nil {
		return err
	}
	if b.chunkRead != nil {
		b.chunkRead()
	}
	for _, j := range jobs {
		if err := storekit.Insert(ctx, c, j, &b.aliases); err != nil {
			return err
		}
	}
	written, err := c.write(ctx)
	if err != nil {
		return err
	}
	if !written { // a unique key taken meanwhile: one job at a time
		for _, j := range jobs {
			j.ExistingID = ""
			if err := storekit.Insert(ctx, stagedTx{insertTx{b.tx}, &b.later}, j, &b.aliases); err != nil {
				return err
			}
		}
	}
	return b.noteWaiting(ctx, jobs)
}

// noteWaiting notes in import_waiting the jobs staged with dependencies:
// every one, not only the waiting ones, since a job cancelled at staging
// (a dependency dead) may also name one not staged yet, which the commit
// checks (CheckLater).
func (b *bulkImport) noteWaiting(ctx context.Context, jobs []*queue.Job) error {
	var ids [][]any
	for _, j := range jobs {
		if j.ExistingID == "" && len(j.After) > 0 {
			ids = append(ids, []any{j.ID})
		}
	}
	if len(ids) == 0 {
		return nil
	}
	if !b.waiting {
		if _, err := b.tx.Exec(ctx, `CREATE TEMP TABLE import_waiting (id text PRIMARY KEY) ON COMMIT DROP`); err != nil {
			return fmt.Errorf("note waiting jobs: %w", err)
		}
		b.waiting = true
	}
	if _, err := b.tx.CopyFrom(ctx, pgx.Identifier{"import_waiting"}, []string{"id"}, pgx.CopyFromRows(ids)); err != nil {
		return fmt.Errorf("note waiting jobs: %w", err)
	}
	return nil
}

// settleWaiting settles the import's waiting jobs (see the top of this
// file), in chunks.
func (b *bulkImport) settleWaiting(ctx context.Context) error {
	if !b.waiting {
		return nil
	}
	// Hold every dependency against a finish until the commit, in id order
	// so that two committers never deadlock.
	if _, err := b.tx.Exec(ctx, `SELECT 1 FROM jobs WHERE id IN (SELECT d.dep_id FROM job_deps d
		JOIN import_waiting w ON w.id = d.job_id) ORDER BY id FOR SHARE`); err != nil {
		return err
	}
	after := ""
	for {
		rows, err := b.tx.Query(ctx, `SELECT w.id FROM import_waiting w JOIN jobs j ON j.id = w.id
			WHERE w.id > $1 AND j.state = 'waiting' ORDER BY w.id LIMIT $2`, after, queue.ImportChunk)
		if err != nil {
			return err
		}
		ids, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			return err
		}
		if err := storekit.SettleImported(ctx, settleTx{b.tx}, ids, time.Now().UTC()); err != nil {
			return err
		}
		if len(ids) < queue.ImportChunk {
			return nil
		}
		after = ids[len(ids)-1]
	}
}

// stagedTx reads dependencies without holding them against a finish, and
// notes in later a job staged after one not stored or staged yet.
type stagedTx struct {
	insertTx
	later *bool
}

func (t stagedTx) Later() { *t.later = true }

// laterTx runs storekit.CheckLater in an import's transaction: the
// import's jobs with dependencies are in import_waiting.
type laterTx struct{ tx pgx.Tx }

func (t laterTx) pairs(ctx context.Context, query string) ([][2]string, error) {
	rows, err := t.tx.Query(ctx, query)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(row pgx.CollectableRow) ([2]string, error) {
		var p [2]string
		err := row.Scan(&p[0], &p[1])
		return p, err
	})
}

func (t laterTx) MissingDeps(ctx context.Context) ([][2]string, error) {
	return t.pairs(ctx, `SELECT d.job_id, d.dep_id FROM job_deps d JOIN import_waiting w ON w.id = d.job_id
		WHERE NOT EXISTS (SELECT 1 FROM jobs x WHERE x.id = d.dep_id)`)
}

func (t laterTx) Repoint(ctx context.Context, job, dep, holder string) error {
	if _, err := t.tx.Exec(ctx, `DELETE FROM job_deps WHERE job_id = $1 AND dep_id = $2`, job, dep); err != nil {
		return err
	}
	_, err := t.tx.Exec(ctx, `INSERT INTO job_deps (job_id, dep_id) VALUES ($1, $2) ON CONFLICT DO NOTHING`, job, holder)
	return err
}

func (t laterTx) Edges(ctx context.Context) ([][2]string, error) {
	return t.pairs(ctx, `SELECT d.job_id, d.dep_id FROM job_deps d JOIN import_waiting w ON w.id = d.job_id
		JOIN import_waiting w2 ON w2.id = d.dep_id`)
}

func (t stagedTx) DependencyStates(ctx context.Context, ids []string) (map[string]queue.State, error) {
	return t.states(ctx, `SELECT id, state FROM jobs WHERE id = ANY($1) ORDER BY id FOR KEY SHARE`, ids)
}

// Commit implements queue.Import.
func (b *bulkImport) Commit(ctx context.Context) error { return transient(b.commit(ctx)) }

func (b *bulkImport) commit(ctx context.Context) error {
	if b.done {
		return errors.New("commit import: the import has ended")
	}
	b.done = true
	if err := b.chunks.Wait(); err != nil {
		b.tx.Rollback(context.WithoutCancel(ctx))
		return fmt.Errorf("commit import: %w: %w", queue.ErrEarlierChunk, err)
	}
	if b.later {
		if err := storekit.CheckLater(ctx, laterTx{b.tx}, &b.aliases); err != nil {
			b.tx.Rollback(context.WithoutCancel(ctx))
			return fmt.Errorf("commit import: %w", err)
		}
	}
	if err := b.settleWaiting(ctx); err != nil {
		b.tx.Rollback(context.WithoutCancel(ctx))
		return fmt.Errorf("commit import: %w", err)
	}
	if _, err := b.tx.Exec(ctx, notifySQL, b.s.channel); err != nil {
		b.tx.Rollback(context.WithoutCancel(ctx))
		return fmt.Errorf("commit import: %w", err)
	}
	if err := b.tx.Commit(ctx); err != nil {
		return fmt.Errorf("commit import: %w", err)
	}
	b.s.wake.broadcast()
	return nil
}

// Abort implements queue.Import.
func (b *bulkImport) Abort(ctx context.Context) error {
	if b.done {
		return nil
	}
	b.done = true
	b.chunks.Wait() // whatever it did is rolled back
	if err := b.tx.Rollback(ctx); err != nil {
		return fmt.Errorf("abort import: %w", err)
	}
	return nil
}
