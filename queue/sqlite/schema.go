package sqlite

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"embed"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	sqlite3 "github.com/mattn/go-sqlite3"
	"github.com/queuectl/queuectl/queue"
)

// openBusyWait is how long opening waits out a busy file, as the busy
// timeout of the other connections (dsn).
const openBusyWait = 5 * time.Second

//go:embed migrations/*.sql
var migrationFS embed.FS

// Open opens (creating if needed) the database at path and applies
// migrations. It refuses files that are not SQLite databases and databases
// whose schema is newer than this binary, without changing them.
func Open(ctx context.Context, path string) (*Store, error) {
	return OpenWith(ctx, path, Options{})
}

// Options tune Open for one kind of caller.
type Options struct {
	// OneConnection makes reads use the writer's connection instead of a
	// pool of their own. Each connection SQLite opens reads and parses
	// the whole schema first, so a command that makes a few reads and a
	// write and exits (enqueue of one job) spends about a third of its
	// time to an open store on the readers' connection
	// (docs/benchmarks.md, "One connection for a one-shot enqueue"). For
	// a caller that does one thing at a time: a read waits while another
	// read or a write is in progress.
	// The store's own methods never read again while they hold a read
	// open, which would wait for itself (TestConformanceOneConnection).
	// The connection waits out a busy file in SQLite's busy handler,
	// as the readers' connections do.
	OneConnection bool
	// MustExist refuses to create the database: when path names no file,
	// OpenWith fails with an error wrapping ErrNoDatabase and creates
	// nothing. For commands that only read, which would otherwise leave
	// an empty database at a mistyped path and show it as empty.
	MustExist bool
	// AsIs opens the database as it is: no migration, and nothing written
	// at open (imports a dead process left are not finished). For a copy
	// of it (backup): one taken with a newer binary before an upgrade
	// must hold the schema the old binary runs.
	AsIs bool
}

// ErrNoDatabase is OpenWith's error, with Options.MustExist, for a path
// that names no file.
var ErrNoDatabase = errors.New("no database")

// OpenWith is Open with options.
func OpenWith(ctx context.Context, path string, o Options) (*Store, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	if err := checkFile(abs, !o.MustExist); err != nil {
		return nil, err
	}
	if !writable(abs) {
		return openReadOnly(ctx, abs, errReadOnly, o.AsIs)
	}
	// The writer waits for the lock in write, not in SQLite's busy handler.
	// It reads pages with pread, not through a memory map: after another
	// process's commit SQLite drops a connection's cached pages and, with
	// a map, unmaps and maps the whole map again before its next read,
	// which cost worker processes more CPU per job than reading the pages
	// they need (docs/benchmarks.md, "The writer reads without a memory
	// map").
	// A writer that also reads keeps the busy timeout of the readers
	// (dsn): a read has no loop of its own that waits out a busy file.
	pragmas := "PRAGMA busy_timeout = 0; PRAGMA mmap_size = 0"
	if o.OneConnection {
		pragmas = "PRAGMA mmap_size = 0"
	}
	writeDB := sql.OpenDB(connector{dsn: dsn(abs, false), drv: &sqlite3.SQLiteDriver{
		ConnectHook: func(c *sqlite3.SQLiteConn) error {
			if _, err := c.Exec(pragmas, nil); err != nil {
				return err
			}
			return fullUnlessWAL(c)
		},
	}})
	writeDB.SetMaxOpenConns(1)
	writeDB.SetMaxIdleConns(1)
	writeDB.SetConnMaxLifetime(0)
	writeDB.SetConnMaxIdleTime(0)
	s := &Store{path: abs, walPath: walPath(abs), writeDB: writeDB, stmts: map[string]*sql.Stmt{}, syncFile: syncData}
	// Without the lock file, writes still take turns through SQLite's
	// lock alone, by polling.
	s.lock, _ = openFileLock(abs+"-lock", abs)
	if o.AsIs {
		// Not migrated: its schema may be any version.
	} else if s.migrated, err = s.migrate(ctx); err != nil {
		writeDB.Close()
		s.lock.close()
		if isFull(err) {
			// No room for the -shm file or the migration: still readable.
			return openReadOnly(ctx, abs, errDiskFull, o.AsIs)
		}
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	if o.OneConnection {
		s.readDB = writeDB
	} else if s.readDB, err = sql.Open("sqlite3", dsn(abs, true)); err != nil {
		s.Close()
		return nil, fmt.Errorf("open %s: %w", path, err)
	} else {
		s.readDB.SetMaxOpenConns(4)
		s.readDB.SetMaxIdleConns(4)
	}
	s.wake = newWaker(abs+"-wake", abs)
	s.events = newWaker(abs+"-events", abs)
	// Imports left by a process that died are finished or dropped. Their
	// jobs are invisible meanwhile, so a failure here only leaves the
	// work to the next Open or import.
	if !o.AsIs {
		_, _ = s.recoverImports(ctx)
	}
	return s, nil
}

// checkFile gives clear errors for a missing or unwritable directory and
// for a file that is not SQLite, before SQLite touches anything. A path
// that is a symbolic link is checked at the file the link leads to, which
// is created when it does not exist yet (as SQLite would create a new
// database's file through the link), unless create is false: then a
// missing file is ErrNoDatabase.
func checkFile(path string, create bool) error {
	end, err := linkEnd(path)
	if err != nil {
		return fmt.Errorf("open %s: %w", path, err)
	}
	if err := checkTarget(end, create); err != nil {
		if end != path {
			return fmt.Errorf("open %s, a symbolic link to %s: %w", path, end, err)
		}
		return fmt.Errorf("open %s: %w", path, err)
	}
	return nil
}

// linkEnd follows path's symbolic links to the file they lead to, which
// may not exist yet; a path that is not a link is its own end.
func linkEnd(path string) (string, error) {
	for range 40 {
		fi, err := os.Lstat(path)
		if errors.Is(err, os.ErrNotExist) || err == nil && fi.Mode()&os.ModeSymlink == 0 {
			return path, nil
		}
		if err != nil {
			return "", err
		}
		target, err := os.Readlink(path)
		if err != nil {
			return "", err
		}
		if !filepath.IsAbs(target) {
			target = filepath.Join(filepath.Dir(path), target)
		}
		path = target
	}
	return "", errors.New("too many levels of symbolic links")
}

// checkTarget is checkFile for the file itself (no link).
func checkTarget(path string, create bool) error {
	if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) && !create {
		return ErrNoDatabase // its directory may be missing too
	}
	dir := filepath.Dir(path)
	st, err := os.Stat(dir)
	if err != nil {
		return fmt.Errorf("directory %s: %w", dir, err)
	}
	if !st.IsDir() {
		return fmt.Errorf("%s is not a directory", dir)
	}
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		// A new database: create it readable by its owner only (jobs carry
		// commands and environments). SQLite gives the WAL and
		// shared-memory files the database file's mode. This also checks
		// that the directory is writable, which SQLite needs for them.
		f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
		if errors.Is(err, os.ErrExist) {
			return nil // created meanwhile by another process
		}
		if err != nil {
			return fmt.Errorf("directory %s is not writable: %w", dir, err)
		}
		return f.Close()
	}
	if err != nil {
		return err
	}
	defer f.Close()
	if fi, err := f.Stat(); err == nil && fi.IsDir() {
		return errors.New("is a directory, not a database file")
	}
	header := make([]byte, 16)
	n, _ := f.Read(header)
	if n == 0 && !create {
		return ErrNoDatabase // empty: no schema, no jobs
	}
	if n == 0 {
		return nil // empty file: SQLite treats it as a new database
	}
	if n < 16 || string(header) != "SQLite format 3\x00" {
		return errors.New("not a SQLite database")
	}
	return nil
}

// walPath is where SQLite keeps the write-ahead log of the database at
// path: beside the file a symbolic link names, not beside the link.
func walPath(path string) string {
	if real, err := filepath.EvalSymlinks(path); err == nil {
		path = real
	}
	return path + "-wal"
}

// fullUnlessWAL makes a writer connection commit with synchronous=FULL
// when its database is not in WAL mode (SQLite could not enable it there):
// write then has no log to sync after the commit, and the commit itself
// must be durable.
func fullUnlessWAL(c *sqlite3.SQLiteConn) error {
	rows, err := c.Query("PRAGMA journal_mode", nil)
	if err != nil {
		return err
	}
	mode := make([]driver.Value, 1)
	err = rows.Next(mode)
	rows.Close()
	if err != nil {
		return fmt.Errorf("read journal mode: %w", err)
	}
	if m, _ := mode[0].(string); strings.EqualFold(m, "wal") {
		return nil
	}
	_, err = c.Exec("PRAGMA synchronous = FULL", nil)
	return err
}

// openSideFile opens a file of the database db's own (path), creating it
// readable by its owner only. Run as root, it gives a file it creates the
// database's owner, as SQLite does its -wal and -shm files: otherwise a
// root command run once against a service's database would leave files
// the service cannot open.
func openSideFile(path, db string, flag int) (*os.File, error) {
	f, err := os.OpenFile(path, flag|os.O_CREATE, 0o600)
	if err != nil || os.Geteuid() != 0 {
		return f, err
	}
	var st, dbst syscall.Stat_t
	if syscall.Fstat(int(f.Fd()), &st) == nil && syscall.Stat(db, &dbst) == nil &&
		(st.Uid != dbst.Uid || st.Gid != dbst.Gid) {
		f.Chown(int(dbst.Uid), int(dbst.Gid)) // best effort: root can use the file either way
	}
	return f, nil
}

func dsn(path string, readOnly bool) string {
	q := url.Values{}
	q.Set("_busy_timeout", "5000")
	q.Set("_journal_mode", "WAL")
	q.Set("_synchronous", "NORMAL")
	q.Set("_foreign_keys", "1")
	q.Set("_txlock", "immediate")
	q.Set("_cache_size", "-16000")
	if readOnly {
		q.Set("_query_only", "1")
	}
	return "file:" + (&url.URL{Path: path}).EscapedPath() + "?" + q.Encode()
}

// Migrate opens (creating if needed) the database at path, applies its
// pending migrations and reports how many this call applied, for an
// explicit migration step before workers start.
func Migrate(ctx context.Context, path string) (applied int, err error) {
	s, err := Open(ctx, path)
	if err != nil {
		return 0, err
	}
	return s.migrated, s.Close()
}

// LatestVersion is the schema version this binary writes.
func LatestVersion() int {
	names, _ := migrationFS.ReadDir("migrations")
	return len(names)
}

// migrate applies the embedded migrations in order, each in its own
// immediate transaction that re-reads the version, so concurrent openers
// agree. It reports how many it applied itself.
func (s *Store) migrate(ctx context.Context) (applied int, err error) {
	names, err := migrationFS.ReadDir("migrations")
	if err != nil {
		return 0, err
	}
	sort.Slice(names, func(i, j int) bool { return names[i].Name() < names[j].Name() })
	latest := len(names)
	version, err := schemaVersion(ctx, s.writeDB, latest)
	if err != nil {
		return 0, err
	}
	for i := version; i < latest; i++ {
		body, err := migrationFS.ReadFile("migrations/" + names[i].Name())
		if err != nil {
			return applied, err
		}
		did := false // by this process; set again on each try
		err = s.write(ctx, true, func(ctx context.Context, tx *sql.Tx) error {
			did = false
			var v int
			if err := tx.QueryRowContext(ctx, "PRAGMA user_version").Scan(&v); err != nil {
				return err
			}
			if v > i {
				return nil // another process applied it
			}
			if _, err := tx.ExecContext(ctx, string(body)); err != nil {
				return fmt.Errorf("migration %s: %w", names[i].Name(), err)
			}
			_, err := tx.ExecContext(ctx, "PRAGMA user_version = "+strconv.Itoa(i+1))
			did = err == nil
			return err
		})
		if err != nil {
			return applied, fmt.Errorf("migrate: %w", err)
		}
		if did {
			applied++
		}
	}
	return applied, nil
}

// schemaVersion reads the database's schema version, refusing one newer
// than latest (the binary's).
// The writer's connection does not wait in SQLite's busy handler (Open;
// unless Options.OneConnection), and the file can be busy for a moment
// even for a read: another process
// checkpointing the log as it closes holds it exclusively. So a busy read
// is tried again, for up to openBusyWait.
func schemaVersion(ctx context.Context, db *sql.DB, latest int) (int, error) {
	var version int
	deadline := time.Now().Add(openBusyWait)
	for {
		err := db.QueryRowContext(ctx, "PRAGMA user_version").Scan(&version)
		if err == nil {
			break
		}
		if !isBusy(err) || time.Now().After(deadline) {
			return 0, describe(err)
		}
		select {
		case <-ctx.Done():
			return 0, ctx.Err()
		case <-time.After(5 * time.Millisecond):
		}
	}
	if version > latest {
		return 0, fmt.Errorf("%w (schema version %d, this binary knows %d): upgrade queuectl", queue.ErrSchemaNewer, version, latest)
	}
	return version, nil
}

// checkVersion checks that a database opened read-only needs no
// migration, since none can be applied.
func checkVersion(ctx context.Context, db *sql.DB) error {
	latest := LatestVersion()
	version, err := schemaVersion(ctx, db, latest)
	if err != nil {
		return err
	}
	if version < latest {
		return fmt.Errorf("%w and needs an upgrade of its schema (version %d, this binary writes %d): open it once where it is writable", errReadOnly, version, latest)
	}
	return nil
}

// Close releases the connections and the wake-up watcher.
func (s *Store) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	var errs []error
	for _, st := range s.stmts {
		st.Close()
	}
	s.stmts = map[string]*sql.Stmt{}
	if s.events != nil {
		s.events.close()
	}
	if s.wake != nil {
		s.wake.close()
	}
	s.closed = true
	s.lock.close()
	if s.readDB != nil && s.readDB != s.writeDB {
		errs = append(errs, s.readDB.Close())
	}
	if s.writeDB != nil {
		errs = append(errs, s.writeDB.Close())
	}
	return errors.Join(errs...)
}
