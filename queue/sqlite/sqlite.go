// Package sqlite is queuectl's embedded Store: one SQLite file shared safely
// by many worker processes on one host.
//
// Design:
//   - WAL journal, so readers never block the writer.
//   - One writer connection per process; every writing transaction is
//     BEGIN IMMEDIATE (a deferred read-then-write upgrade would fail with
//     SQLITE_BUSY without waiting). Processes take turns through a flock
//     on a "-lock" file beside the database, held around each write
//     transaction, so a writer waiting for another sleeps in the kernel
//     until the lock is free (lock.go). Should SQLite still report the
//     database busy (a writer that does not take the flock), the writer
//     retries from Go with a short backoff (20 µs up to 1 ms); either wait
//     lasts at most busyWait. SQLite's own busy handler would sleep a whole
//     millisecond or more per try, which a transaction of ~100 µs does not
//     need. Connection set-up keeps a 5 s busy timeout. Reads use a
//     separate, query-only pool with the busy timeout; a one-shot command
//     (Options.OneConnection) reads on the writer's connection instead,
//     which then keeps the busy timeout too, so a write of its that finds
//     the file busy past the flock may also wait up to 5 s in SQLite.
//   - Pragmas are set in the DSN, so every connection gets them.
//   - Claiming is one atomic UPDATE … WHERE rowid IN (SELECT … LIMIT n)
//     RETURNING, backed by a partial index matching its filter and order.
//   - Durability: every transaction commits with synchronous=NORMAL (the
//     log is written, not flushed). Those acknowledging a user's request
//     (enqueue, retry, cancel, config) then flush the log to the device
//     after releasing the write lock and before they return, so they
//     survive a power loss and no other writer waits for the device.
//     Worker state changes are not flushed: a power loss may forget a
//     claim or an outcome, and the only effect is that the job runs again
//     (at-least-once).
//   - Wake-ups across processes: writers that make work runnable touch a
//     "<db>-wake" file beside the database, which idle workers watch with
//     inotify on Linux (elsewhere they fall back to polling).
//   - Migrations are embedded and versioned with PRAGMA user_version; a
//     database written by a newer binary is refused.
//   - A database that cannot be written (read-only file, directory or
//     media, or a disk too full for the -shm file) opens read-only; writes
//     then fail at once naming the database (readonly.go). A write that
//     runs out of space fails as "disk full" and is rolled back.
//   - Each store counts its write transactions, the time it waited for
//     and held the write lock, and the holding thread's CPU time
//     meanwhile (WriteStats).
//   - Monitoring counters (jobs by queue and state, start delays, run
//     times) are kept by the write transactions: each notes what it
//     changed and adds it with one upsert before it commits (counts.go).
//   - Bulk imports stage their jobs hidden, a chunk per transaction, and
//     publish them after one short commit; an importer's flock tells the
//     next process whether to finish or drop an import left behind (bulk.go).
package sqlite

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	sqlite3 "github.com/mattn/go-sqlite3"
	"github.com/queuectl/queuectl/queue"
)

var _ queue.Store = (*Store)(nil)

// Store is a queue.Store on one SQLite file.
type Store struct {
	path    string
	walPath string // SQLite's write-ahead log: beside the database's real file, symbolic links resolved
	writeDB *sql.DB
	readDB  *sql.DB

	mu         sync.Mutex // serializes writes
	stmts      map[string]*sql.Stmt
	unprepared []string // first seen in the current transaction
	tally      tally    // the current transaction's changes to the counters (counts.go)
	countArgs  []any    // tally.flush's values, reused
	closed     bool
	migrated   int                  // schema migrations Open applied
	readOnly   error                // why the store was opened read-only (writeDB is nil); nil: writable
	lock       *fileLock            // the processes' write lock (lock.go); nil if its file cannot be opened
	syncFile   func(*os.File) error // flushes a file to the device (syncData)

	wake   *waker
	events *waker // job events: attempts ended, output appended

	writeStats writeCounters
}

// busyWait bounds how long a write waits for other processes' write locks.
const busyWait = 10 * time.Second

// connector opens connections of one DSN through a driver with hooks.
type connector struct {
	dsn string
	drv *sqlite3.SQLiteDriver
}

func (c connector) Connect(context.Context) (driver.Conn, error) { return c.drv.Open(c.dsn) }
func (c connector) Driver() driver.Driver                        { return c.drv }

// pause sleeps d with the kernel's timer, not the Go runtime's: runtime
// timers can be a millisecond coarse (an idle host, a VM), which would make
// every wait for another process's write lock cost a millisecond.
func pause(d time.Duration) {
	ts := syscall.NsecToTimespec(int64(d))
	for syscall.Nanosleep(&ts, &ts) == syscall.EINTR {
	}
}

// busyBackoff is the pause before try n+1 of a busy write: 20 µs growing
// by half each time up to 1 ms, with jitter so processes do not collide
// in step.
func busyBackoff(n int) time.Duration {
	d := 20 * time.Microsecond
	for i := 1; i < n && d < time.Millisecond; i++ {
		d = d * 3 / 2
	}
	d = min(d, time.Millisecond)
	return d/2 + time.Duration(rand.Int64N(int64(d)))
}

// write runs fn in a BEGIN IMMEDIATE transaction on the writer connection
// (a pool of one), retrying a bounded number of times when SQLite reports
// the database busy. durable makes the transaction survive a power loss
// before write returns, for transactions that acknowledge a user; the
// others may be forgotten by one (synchronous=NORMAL).
//
// Every transaction commits with synchronous=NORMAL, which in WAL mode
// writes the log without syncing it. A durable one then syncs the log
// after the write locks are released (syncLog), so the device's flush no
// longer holds up every other writer, and writers that commit while one
// sync runs share the next. Another process may see the transaction
// before it is durable; a power loss in that window forgets it, and with
// it everything committed after it (the log is replayed in order), and
// nothing of that was acknowledged: an acknowledgement comes from a sync
// that covers the whole log before it. The log is opened before the
// transaction, so that a write-back error on its pages reaches this
// descriptor's sync (Linux reports such errors to descriptors opened
// before them). A sync that fails returns errNotDurable: the change is
// stored, and the caller must not take it as undone.
//
// A transaction, once begun, is not cancelled with ctx: the driver cannot
// reset a connection interrupted mid-transaction, and database/sql would
// discard the writer connection. ctx is checked before the start; fn gets
// a context without its cancellation, for every statement it runs. (The
// driver runs a statement whose context can be cancelled on a goroutine
// of its own, to interrupt it: a goroutine and two thread wake-ups per
// statement, one per job in a batch of outcomes. Statements run with the
// uncancellable context: the engine at 64 slots 1.17 × the rate, 0.88 ×
// the CPU per job.)
func (s *Store) write(ctx context.Context, durable bool, fn func(ctx context.Context, tx *sql.Tx) error) error {
	return s.writeThen(ctx, durable, fn, nil)
}

// writeThen is write that calls committed, when not nil, once the
// transaction has committed and before the log is synced.
func (s *Store) writeThen(ctx context.Context, durable bool, fn func(ctx context.Context, tx *sql.Tx) error, committed func()) error {
	var log *os.File
	if durable {
		var err error
		if log, err = s.openLog(); err != nil {
			return err
		}
		if log != nil {
			defer log.Close()
		}
	}
	if err := s.commit(ctx, fn); err != nil {
		return err
	}
	if committed != nil {
		committed()
	}
	return s.syncLog(log)
}

// commit runs fn in a write transaction under the process's and the
// processes' write locks, as write describes.
func (s *Store) commit(ctx context.Context, fn func(ctx context.Context, tx *sql.Tx) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	ctx = context.WithoutCancel(ctx)
	asked := time.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return errors.New("store is closed")
	}
	if s.readOnly != nil {
		return s.refusal(s.readOnly)
	}
	defer s.prepareSeen(ctx)
	var err error
	start := time.Now()
	if s.lock != nil {
		if err := s.lock.lock(busyWait); errors.Is(err, errLockWait) {
			return stayedBusy(err)
		} else if err == nil {
			defer s.lock.unlock()
		}
		// Any other failure leaves the order to SQLite's lock alone.
	}
	for try := 1; ; try++ {
		err = s.tryWrite(ctx, asked, fn)
		if err == nil || !isBusy(err) {
			break
		}
		if time.Since(start) > busyWait {
			return stayedBusy(err)
		}
		pause(busyBackoff(try))
	}
	if isFull(err) {
		// SQLite rolls the transaction back: nothing was changed.
		return fmt.Errorf("%w: %v", s.refusal(errDiskFull), err)
	}
	return describe(err)
}

// errNotDurable is the error of a durable write whose transaction
// committed but whose log could not be synced.
var errNotDurable = errors.New("the change is stored but may not survive a power loss")

// openLog opens the write-ahead log for syncLog. It returns nil without
// a log: the database is not in WAL mode, and its writer then commits
// with synchronous=FULL (fullUnlessWAL).
func (s *Store) openLog() (*os.File, error) {
	f, err := os.Open(s.walPath)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("open log: %w", err)
	}
	return f, nil
}

// syncLog makes every transaction committed so far durable: it flushes
// the write-ahead log to the device. A checkpoint that copied the log into
// the database synced both first (synchronous=NORMAL does), and the log is
// reused only after that, so whatever it no longer holds (even if the file
// was replaced meanwhile) is durable already.
func (s *Store) syncLog(log *os.File) error {
	if log == nil {
		return nil
	}
	if err := s.syncFile(log); err != nil {
		return fmt.Errorf("sync log %s (%w): %w", log.Name(), errNotDurable, err)
	}
	return nil
}

// stayedBusy is a write's error when another process kept the lock for
// all of busyWait.
func stayedBusy(err error) error {
	return fmt.Errorf("%w for %s: %w", unavailable("database stayed busy (locked by another process)"), busyWait, err)
}

func (s *Store) tryWrite(ctx context.Context, asked time.Time, fn func(ctx context.Context, tx *sql.Tx) error) error {
	tx, err := s.writeDB.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	// The transaction's goroutine keeps its thread until COMMIT, and no
	// other goroutine runs there meanwhile, so the thread's CPU clock
	// counts this transaction's work alone (WriteStats.HeldCPU). Nothing
	// in a transaction waits on Go's side, so the thread is not held idle.
	runtime.LockOSThread()
	begun := time.Now()
	cpu0, timed := threadCPU()
	defer func() {
		var cpu time.Duration // inside [begun, now]: at most the time held
		if cpu1, ok := threadCPU(); ok && timed {
			cpu = cpu1 - cpu0
		}
		runtime.UnlockOSThread()
		s.writeStats.add(asked, begun, time.Now(), cpu)
	}()
	s.tally.reset()
	if err := fn(ctx, tx); err != nil {
		tx.Rollback()
		return err
	}
	if err := s.tally.flush(ctx, s, tx); err != nil {
		tx.Rollback()
		return err
	}
	return tx.Commit()
}

// stmt returns query as a statement of tx. Statements are prepared once on
// the writer pool and reused; one seen for the first time is prepared on
// the transaction now and on the pool once the transaction is over (the
// pool's one connection is busy until then). Statements prepared on the
// pool, unlike ones prepared on a sql.Conn, are reused by Tx.StmtContext
// instead of prepared again each time.
func (s *Store) stmt(ctx context.Context, tx *sql.Tx, query string) (*sql.Stmt, error) {
	if st, ok := s.stmts[query]; ok {
		return tx.StmtContext(ctx, st), nil
	}
	s.unprepared = append(s.unprepared, query)
	return tx.PrepareContext(ctx, query)
}

// prepareSeen prepares on the pool the statements first seen in the last
// transaction. Failures only cost speed: the next use prepares again.
func (s *Store) prepareSeen(ctx context.Context) {
	for _, q := range s.unprepared {
		if _, ok := s.stmts[q]; ok {
			continue
		}
		if st, err := s.writeDB.PrepareContext(ctx, q); err == nil {
			s.stmts[q] = st
		}
	}
	s.unprepared = s.unprepared[:0]
}

func isBusy(err error) bool {
	var se sqlite3.Error
	return errors.As(err, &se) && (se.Code == sqlite3.ErrBusy || se.Code == sqlite3.ErrLocked)
}

// isFull reports a write that failed for lack of space: SQLITE_FULL, or an
// I/O error whose cause was ENOSPC (growing the -wal or -shm file).
func isFull(err error) bool {
	var se sqlite3.Error
	return errors.As(err, &se) && (se.Code == sqlite3.ErrFull || se.SystemErrno == syscall.ENOSPC)
}

func isUnique(err error) bool {
	var se sqlite3.Error
	return errors.As(err, &se) && (se.ExtendedCode == sqlite3.ErrConstraintUnique || se.ExtendedCode == sqlite3.ErrConstraintPrimaryKey)
}

// describe turns SQLite's terse errors into ones a user can act on.
func describe(err error) error {
	var se sqlite3.Error
	if err == nil || !errors.As(err, &se) {
		return err
	}
	switch se.Code {
	case sqlite3.ErrNotADB:
		return fmt.Errorf("not a SQLite database: %w", err)
	case sqlite3.ErrReadonly, sqlite3.ErrPerm, sqlite3.ErrCantOpen:
		return fmt.Errorf("database is not writable: %w", err)
	case sqlite3.ErrBusy, sqlite3.ErrLocked:
		return fmt.Errorf("database is busy (locked by another process): %w", err)
	case sqlite3.ErrFull:
		return fmt.Errorf("disk full: %w", err)
	}
	return err
}

// Time encoding: integer microseconds since the Unix epoch, UTC.

func toUS(t time.Time) int64 { return t.UnixMicro() }

func toUSOrZero(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixMicro()
}

func toUSNull(t time.Time) sql.NullInt64 {
	if t.IsZero() {
		return sql.NullInt64{}
	}
	return sql.NullInt64{Int64: t.UnixMicro(), Valid: true}
}

func fromUS(us int64) time.Time { return time.UnixMicro(us).UTC() }

func fromUSNull(n sql.NullInt64) time.Time {
	if !n.Valid {
		return time.Time{}
	}
	return fromUS(n.Int64)
}

func nullString(s string) sql.NullString { return sql.NullString{String: s, Valid: s != ""} }

func nullInt(p *int) sql.NullInt64 {
	if p == nil {
		return sql.NullInt64{}
	}
	return sql.NullInt64{Int64: int64(*p), Valid: true}
}

// limitTo is a LIMIT clause of n rows. The number is written into the
// statement rather than bound: SQLite (3.54) plans with a bound LIMIT's
// value, so every bind of one expires the statement and the next step
// prepares it again (sqlite3ExprIsInteger, sqlite3VdbeReprepareOnBind).
// For the claim's statement that cost more than the rest of the claim (a
// one-job read inside a write transaction: 127 µs with a bound limit,
// 35 µs with a written one). The statement cache then holds one claim
// statement per limit a lane asks for: at most its slots.
func limitTo(n int) string { return " LIMIT " + strconv.Itoa(n) }

// placeholders returns "?, ?, ?" for n values.
func placeholders(n int) string {
	return strings.TrimSuffix(strings.Repeat("?, ", n), ", ")
}
