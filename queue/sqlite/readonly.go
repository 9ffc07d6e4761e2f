package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"syscall"

	sqlite3 "github.com/mattn/go-sqlite3"
	"github.com/queuectl/queuectl/queue"
)

// A database queuectl cannot write (a read-only file, directory or
// filesystem, a backup restored without write permission) still opens, read
// only, so that status, list and show work; every write fails at once with
// an error naming the database.
//
// WAL needs the "-shm" file even to read. SQLite opens a WAL database read
// only (mode=ro) when its -shm exists or can be created, and also on
// read-only media when there is no -wal file left (a clean close removes
// both). When neither works (no -shm can be created: read-only media, a
// directory this user may not write, or a full disk) and no -wal file holds data, the database opens immutable
// (immutable=1): SQLite then takes no locks and trusts that nothing
// changes the file, which holds where nobody can write, and on a full disk
// risks at worst a failed read if space is freed meanwhile and a writer
// moves pages under a short-lived read command. A -wal file that holds data but cannot be read
// through a -shm is refused rather than ignored, since its transactions
// would be missing from what is shown.

// Why a store is read-only; every write fails with it.
var (
	errReadOnly = queue.ErrReadOnly
	errDiskFull = unavailable("disk full")
)

// unavailable is an error that is queue.ErrUnavailable without saying so
// in its message.
type unavailable string

func (u unavailable) Error() string        { return string(u) }
func (u unavailable) Is(target error) bool { return target == queue.ErrUnavailable }

// writable reports whether SQLite can write the database at path: the file
// must be writable, and so must the directory unless the -wal and -shm
// files exist writable already (SQLite creates them beside the file).
func writable(path string) bool {
	const wOK = 2 // access(2) W_OK; the kernel also answers EROFS here
	if syscall.Access(path, wOK) != nil {
		return false
	}
	if syscall.Access(filepath.Dir(path), wOK) == nil {
		return true
	}
	for _, suffix := range []string{"-wal", "-shm"} {
		if syscall.Access(path+suffix, wOK) != nil {
			return false
		}
	}
	return true
}

// openReadOnly opens the database at abs for reading only; writes fail
// with why. asIs (Options.AsIs, a backup) takes the schema as it is, as
// a writable store opened so does: a copy needs no upgrade.
func openReadOnly(ctx context.Context, abs string, why error, asIs bool) (*Store, error) {
	db, err := openReadPool(ctx, abs, true)
	if err != nil {
		return nil, fmt.Errorf("open %s read-only: %w", abs, describe(err))
	}
	s := &Store{path: abs, walPath: walPath(abs), readOnly: why, readDB: db, stmts: map[string]*sql.Stmt{}, syncFile: syncData, wake: newWaker(abs+"-wake", abs),
		events: newWaker(abs+"-events", abs)}
	if asIs {
		return s, nil
	}
	if err := checkVersion(ctx, db); err != nil {
		db.Close()
		return nil, fmt.Errorf("open %s read-only: %w", abs, err)
	}
	return s, nil
}

// openReadPool opens a read-only pool on abs: mode=ro, else, where no -shm
// can be created and no -wal holds data, immutable. queryOnly also refuses
// VACUUM INTO, which writes another file: a backup opens without it.
func openReadPool(ctx context.Context, abs string, queryOnly bool) (*sql.DB, error) {
	db, err := openReadDB(ctx, abs, false, queryOnly)
	if err != nil && (isCantOpen(err) || isReadOnlyOpen(err) || isFull(err)) && !walHasData(abs) {
		db, err = openReadDB(ctx, abs, true, queryOnly)
	}
	return db, err
}

// openReadDB opens a read-only pool and checks that it can read.
func openReadDB(ctx context.Context, abs string, immutable, queryOnly bool) (*sql.DB, error) {
	q := url.Values{}
	q.Set("mode", "ro")
	if queryOnly {
		q.Set("_query_only", "1")
	}
	q.Set("_busy_timeout", "5000")
	if immutable {
		q.Set("immutable", "1")
	}
	db, err := sql.Open("sqlite3", "file:"+(&url.URL{Path: abs}).EscapedPath()+"?"+q.Encode())
	if err != nil {
		return nil, err
	}
	db.SetMaxOpenConns(4)
	var n int
	if err := db.QueryRowContext(ctx, "SELECT count(*) FROM sqlite_master").Scan(&n); err != nil {
		db.Close()
		return nil, err
	}
	return db, nil
}

// refusal is the error of a write that cannot be done, and why.
func (s *Store) refusal(why error) error {
	if errors.Is(why, errDiskFull) {
		return fmt.Errorf("%w: cannot write %s, nothing changed (free some space and try again)", errDiskFull, s.path)
	}
	return fmt.Errorf("%w: %s", why, s.path)
}

func isCantOpen(err error) bool {
	var se sqlite3.Error
	return errors.As(err, &se) && se.Code == sqlite3.ErrCantOpen
}

// isReadOnlyOpen reports whether a read-only open failed because SQLite
// could not create the -shm file: in a directory it may not write to (a
// writable file there) it answers SQLITE_READONLY_DIRECTORY, not
// SQLITE_CANTOPEN as on read-only media.
func isReadOnlyOpen(err error) bool {
	var se sqlite3.Error
	return errors.As(err, &se) && se.Code == sqlite3.ErrReadonly
}

// walHasData reports whether a -wal file beside abs may hold transactions.
func walHasData(abs string) bool {
	fi, err := os.Stat(abs + "-wal")
	return err == nil && fi.Size() > 0
}
