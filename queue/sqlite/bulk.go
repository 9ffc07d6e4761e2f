package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"
	"syscall"
	"time"

	"github.com/queuectl/queuectl/queue"
	"github.com/queuectl/queuectl/queue/internal/storekit"
)

// Bulk imports (enqueue --file) on SQLite, all or nothing without holding
// the write lock for the whole file:
//
//  1. Begin takes an exclusive flock on a lock file beside the database
//     ("<db>-import-<id>"), then records the import (imports table).
//  2. Each chunk is one transaction inserting jobs in state 'staged' with
//     the import's id. No reader shows a staged job and no claim takes one;
//     the id is taken, so a duplicate is found at once. A job with a
//     unique key or dependencies goes through storekit.Insert: its key is
//     held (by the unique index) from then on, unless it was decided
//     cancelled (its reason in error: such a job holds no key, as at
//     enqueue), and the jobs it runs after exist, are staged earlier by
//     this import, or are to come later in it.
//  3. Commit is one short durable transaction marking the
//     import committed: from then on it will be published. When a job
//     named one to come later, it first checks that every job the
//     import's jobs run after exists, and that they do not wait for each
//     other (storekit.CheckLater). Publishing
//     turns staged jobs pending (waiting, for those with dependencies;
//     cancelled, for those decided so) in chunks of queue.ImportChunk; jobs become visible chunk by chunk over
//     about a second. In the same transaction, the waiting jobs of the chunk
//     are settled against their dependencies as they are now
//     (storekit.SettleImported): one may have finished meanwhile.
//
// A chunk of plain jobs is written while the caller reads and checks the
// next (decoding a file's JSON and SQLite's inserts overlap, on two
// cores); the next Stage, Commit or Abort waits for it first, so a
// failure of that chunk is reported there (queue.ErrEarlierChunk). A
// chunk holding a job with a unique key or dependencies is written before
// Stage returns: the caller reads each job's ExistingID after it.
//
// A process that dies leaves its import recorded and its lock file
// unlocked (the kernel drops the flock). The next Open or Begin finds it:
// uncommitted, its staged jobs are deleted; committed, publishing is
// finished. The flock tells a dead importer from a live one exactly, on the
// one host a SQLite database lives on.

const insertStagedJob = `INSERT INTO jobs (id, queue, command, state, priority, attempts, max_retries, timeout_us,
	backoff_base, max_backoff_us, run_at, created_at, updated_at, env, dir, template, scheduled_at, fire_key,
	labels, hooks, unique_key, error, import_id)
	VALUES (?1, ?2, ?3, 'staged', ?4, 0, ?5, ?6, ?7, ?8, ?9, ?10, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19, ?21)`

// stagedRows selects a chunk of an import's staged jobs.
const stagedRows = `SELECT rowid FROM jobs WHERE import_id = ? AND state = 'staged'`

type bulkImport struct {
	s      *Store
	id     string
	lock   *os.File
	done   bool
	chunks storekit.Chunks
	// aliases are the jobs not staged because their unique key was
	// held, for the jobs after them in later chunks.
	aliases storekit.Aliases
	// later: a job was staged after a job not stored or staged yet
	// (storekit.LaterTx); Commit checks the import's dependencies.
	later bool
}

var _ queue.Import = (*bulkImport)(nil)

// BeginImport implements queue.Store.
func (s *Store) BeginImport(ctx context.Context) (queue.Import, error) {
	if _, err := s.recoverImports(ctx); err != nil {
		return nil, fmt.Errorf("begin import: %w", err)
	}
	id := queue.NewID()
	lock, ok, err := s.lockImport(id)
	if err != nil || !ok {
		return nil, fmt.Errorf("begin import: lock %s: %v", s.importLock(id), err)
	}
	err = s.write(ctx, false, func(ctx context.Context, tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO imports (id, committed) VALUES (?, 0)`, id)
		return err
	})
	if err != nil {
		s.unlockImport(id, lock)
		return nil, fmt.Errorf("begin import: %w", err)
	}
	return &bulkImport{s: s, id: id, lock: lock}, nil
}

// Stage implements queue.Import. Staged jobs need no fsync of their own:
// in WAL mode the log's flush after the commit record, written after
// them, makes them durable with it.
func (b *bulkImport) Stage(ctx context.Context, jobs []*queue.Job) error {
	if b.done {
		return errors.New("stage jobs: the import has ended")
	}
	return b.chunks.Stage(ctx, jobs, b.stage, b.stage)
}

// stage writes one chunk in a transaction of its own.
func (b *bulkImport) stage(ctx context.Context, jobs []*queue.Job) error {
	return b.s.write(ctx, false, func(ctx context.Context, tx *sql.Tx) error {
		st, err := b.s.stmt(ctx, tx, insertStagedJob)
		if err != nil {
			return err
		}
		for _, j := range jobs {
			if storekit.Plain(j) {
				err = execStaged(ctx, st, j, b.id)
			} else {
				err = storekit.Insert(ctx, stagedTx{insertTx{tx, st, &b.s.tally}, b.id, &b.later}, j, &b.aliases)
			}
			if err != nil {
				return err
			}
		}
		return nil
	})
}

// Commit implements queue.Import.
func (b *bulkImport) Commit(ctx context.Context) error {
	if b.done {
		return errors.New("commit import: the import has ended")
	}
	if err := b.chunks.Wait(); err != nil {
		// Not ended: the caller's Abort drops what was staged.
		return fmt.Errorf("commit import: %w: %w", queue.ErrEarlierChunk, err)
	}
	err := b.s.write(ctx, true, func(ctx context.Context, tx *sql.Tx) error {
		if b.later {
			if err := storekit.CheckLater(ctx, laterTx{tx, b.id}, &b.aliases); err != nil {
				return err
			}
		}
		_, err := tx.ExecContext(ctx, `UPDATE imports SET committed = 1 WHERE id = ?`, b.id)
		return err
	})
	if err != nil && !errors.Is(err, errNotDurable) {
		return fmt.Errorf("commit import: %w", err)
	}
	// Committed, even if not yet durable: the import is published, never
	// aborted.
	b.done = true
	defer b.s.unlockImport(b.id, b.lock)
	if perr := b.s.publish(ctx, b.id); perr != nil && err == nil {
		// The next Open or import, or a running worker's Tidy, finishes
		// publishing.
		err = fmt.Errorf("%w: %w", queue.ErrPublishing, perr)
	}
	if err != nil {
		return fmt.Errorf("commit import: %w", err)
	}
	return nil
}

// Abort implements queue.Import.
func (b *bulkImport) Abort(ctx context.Context) error {
	if b.done {
		return nil
	}
	b.chunks.Wait() // its error is why the import is aborted, or moot now
	b.done = true
	defer b.s.unlockImport(b.id, b.lock)
	if err := b.s.dropImport(ctx, b.id); err != nil {
		return fmt.Errorf("abort import: %w", err)
	}
	return nil
}

// publishChunk makes a chunk of a committed import's staged jobs pending,
// or waiting when they have dependencies, or cancelled when they were
// decided so as they were staged (the reason in error): such a job never
// waits, so it never takes back the unique key it let go of (migration
// 15). It returns each job's id, queue and state.
func publishChunk() string {
	return `UPDATE jobs SET import_id = NULL, state = CASE
	WHEN error IS NOT NULL THEN 'cancelled'
	WHEN EXISTS (SELECT 1 FROM job_deps d WHERE d.job_id = jobs.id) THEN 'waiting' ELSE 'pending' END
	WHERE rowid IN (` + stagedRows + limitTo(queue.ImportChunk) + `) RETURNING id, queue, state`
}

// publish makes a committed import's staged jobs visible, a chunk per
// transaction, then forgets the import.
func (s *Store) publish(ctx context.Context, id string) error {
	for {
		var n int
		err := s.write(ctx, false, func(ctx context.Context, tx *sql.Tx) error {
			rows, err := tx.QueryContext(ctx, publishChunk(), id)
			if err != nil {
				return err
			}
			var waiting, cancelled []string
			for n = 0; rows.Next(); n++ {
				var jid, q, state string
				if err := rows.Scan(&jid, &q, &state); err != nil {
					rows.Close()
					return err
				}
				s.tally.move(q, stateStaged, queue.State(state))
				switch queue.State(state) {
				case queue.StateWaiting:
					waiting = append(waiting, jid)
				case queue.StateCancelled:
					cancelled = append(cancelled, jid)
				}
			}
			rows.Close()
			if err := rows.Err(); err != nil {
				return err
			}
			now := time.Now().UTC()
			if err := storekit.SettleImported(ctx, settleTx{tx, &s.tally}, waiting, now); err != nil {
				return err
			}
			// A job of the import published earlier may wait for one
			// published cancelled now (it named a later line).
			_, err = storekit.Settle(ctx, settleTx{tx, &s.tally}, cancelled, now)
			return err
		})
		if err != nil {
			return fmt.Errorf("publish jobs: %w", err)
		}
		if n > 0 {
			s.wake.notify()
		}
		if n < queue.ImportChunk {
			break
		}
	}
	return s.forgetImport(ctx, id)
}

// dropImport deletes an uncommitted import's staged jobs, a chunk per
// transaction, then forgets the import.
func (s *Store) dropImport(ctx context.Context, id string) error {
	for {
		n, err := s.batch(ctx, false, stagedRows, `DELETE FROM jobs WHERE rowid IN (%s)`, queue.ImportChunk, false, id)
		if err != nil {
			return fmt.Errorf("drop staged jobs: %w", err)
		}
		if n < queue.ImportChunk {
			break
		}
	}
	return s.forgetImport(ctx, id)
}

func (s *Store) forgetImport(ctx context.Context, id string) error {
	return s.write(ctx, false, func(ctx context.Context, tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `DELETE FROM imports WHERE id = ?`, id)
		return err
	})
}

// Tidy implements queue.Tidier: it finishes the imports whose process
// died since this process opened the database (recoverImports), so that a
// long-running worker or service publishes the jobs of an importer killed
// after its commit, and frees the ids and keys of one killed before,
// without waiting for another process to open the database. One read of
// the imports table when there are none.
func (s *Store) Tidy(ctx context.Context) ([]string, error) {
	n, err := s.recoverImports(ctx)
	if n == 0 {
		return nil, err
	}
	return []string{fmt.Sprintf("finished %d import(s) whose process died", n)}, err
}

// recoverImports finishes the imports whose process died: it publishes
// committed ones and drops the others, and reports how many. Imports
// whose lock is held are alive and left alone.
func (s *Store) recoverImports(ctx context.Context) (int, error) {
	rows, err := s.readDB.QueryContext(ctx, `SELECT id, committed FROM imports`)
	if err != nil {
		return 0, describe(err)
	}
	type imp struct {
		id        string
		committed bool
	}
	var imps []imp
	for rows.Next() {
		var i imp
		if err := rows.Scan(&i.id, &i.committed); err != nil {
			rows.Close()
			return 0, err
		}
		imps = append(imps, i)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return 0, err
	}
	// One import that cannot be finished now leaves the others to be.
	n := 0
	var errs []error
	for _, i := range imps {
		lock, ok, err := s.lockImport(i.id)
		if errors.Is(err, fs.ErrPermission) {
			continue // another user's import: alive, or left to that user's processes
		}
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if !ok {
			continue // its process is alive
		}
		if i.committed {
			err = s.publish(ctx, i.id)
		} else {
			err = s.dropImport(ctx, i.id)
		}
		s.unlockImport(i.id, lock)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		n++
	}
	return n, errors.Join(errs...)
}

func (s *Store) importLock(id string) string { return s.path + "-import-" + id }

// lockImport takes the import's lock file without waiting; ok is false
// when another process holds it.
func (s *Store) lockImport(id string) (f *os.File, ok bool, err error) {
	f, err = openSideFile(s.importLock(id), s.path, os.O_RDWR)
	if err != nil {
		return nil, false, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, false, nil
		}
		return nil, false, err
	}
	return f, true, nil
}

// unlockImport removes the lock file, then releases it.
func (s *Store) unlockImport(id string, f *os.File) {
	os.Remove(s.importLock(id))
	f.Close()
}

// stagedTx runs storekit.Insert's steps for a job of import importID: it
// inserts the job staged, and the jobs it runs after are stored ones or
// ones this import staged (not another import's), or later ones (it
// notes them in later).
type stagedTx struct {
	insertTx
	importID string
	later    *bool
}

func (t stagedTx) Later() { *t.later = true }

// laterTx runs storekit.CheckLater for import importID.
type laterTx struct {
	tx       *sql.Tx
	importID string
}

func (t laterTx) pairs(ctx context.Context, query string) ([][2]string, error) {
	rows, err := t.tx.QueryContext(ctx, query, t.importID)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out [][2]string
	for rows.Next() {
		var p [2]string
		if err := rows.Scan(&p[0], &p[1]); err != nil {
			return nil, err
		}
		out = append(out, p)
	}
	return out, rows.Err()
}

// laterMissing and laterEdges are laterTx's queries. In laterEdges x is
// found by its id: the unary + keeps SQLite from scanning the import's jobs
// again for each of them (jobs_staged), which made the commit of a file
// with many later names quadratic in its size, holding the write lock
// (TestLaterChecksFindJobsByID).
const (
	laterMissing = `SELECT d.job_id, d.dep_id FROM jobs j JOIN job_deps d ON d.job_id = j.id
		WHERE j.import_id = ?1 AND j.state = 'staged'
		AND NOT EXISTS (SELECT 1 FROM jobs x WHERE x.id = d.dep_id AND (x.state <> 'staged' OR x.import_id = ?1))`
	laterEdges = `SELECT d.job_id, d.dep_id FROM jobs j JOIN job_deps d ON d.job_id = j.id
		JOIN jobs x ON x.id = d.dep_id
		WHERE j.import_id = ?1 AND j.state = 'staged' AND +x.import_id = ?1 AND +x.state = 'staged'`
)

func (t laterTx) MissingDeps(ctx context.Context) ([][2]string, error) {
	return t.pairs(ctx, laterMissing)
}

func (t laterTx) Repoint(ctx context.Context, job, dep, holder string) error {
	_, err := t.tx.ExecContext(ctx, `UPDATE OR REPLACE job_deps SET dep_id = ?3 WHERE job_id = ?1 AND dep_id = ?2`, job, dep, holder)
	return err
}

func (t laterTx) Edges(ctx context.Context) ([][2]string, error) {
	return t.pairs(ctx, laterEdges)
}

// DependencyStates reads a job this import staged cancelled (its reason
// in error) as cancelled, as the jobs after it would have read it had the
// file been enqueued one job at a time.
func (t stagedTx) DependencyStates(ctx context.Context, ids []string) (map[string]queue.State, error) {
	return t.states(ctx, `SELECT id, CASE WHEN state = 'staged' AND error IS NOT NULL THEN 'cancelled' ELSE state END
		FROM jobs WHERE id IN (SELECT value FROM json_each(?1)) AND (state <> 'staged' OR import_id = ?2)`, ids, t.importID)
}

func (t stagedTx) Insert(ctx context.Context, j *queue.Job) (bool, error) {
	err := execStaged(ctx, t.insert, j, t.importID)
	if err != nil && j.UniqueKey != "" && strings.Contains(err.Error(), "jobs.unique_key") {
		return false, nil
	}
	return err == nil, err
}
