package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// Backup writes a consistent copy of the database to path while other
// processes keep working on it. VACUUM INTO reads one snapshot (a read
// transaction: in WAL mode writers are not blocked) into a fresh, compact
// file. The copy is written beside path under a temporary name, synced, and
// renamed into place, so path is either absent or a complete database.
// An existing path is an error: a backup never overwrites.
func (s *Store) Backup(ctx context.Context, path string) error {
	abs, err := filepath.Abs(path)
	if err != nil {
		return fmt.Errorf("backup: %w", err)
	}
	if _, err := os.Lstat(abs); err == nil {
		return fmt.Errorf("backup: %s exists; choose a new file", path)
	}
	tmp, err := os.CreateTemp(filepath.Dir(abs), "."+filepath.Base(abs)+".partial-*")
	if err != nil {
		// The temporary file is ours; what is wrong is where path points.
		var pe *os.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		return fmt.Errorf("backup: cannot write %s in %s: %w", filepath.Base(abs), filepath.Dir(abs), err)
	}
	// VACUUM INTO writes into an empty file: this one, created 0600, so
	// the copy is never readable by others, not even half-written.
	tmpPath := tmp.Name()
	tmp.Close()
	defer os.Remove(tmpPath)
	// A connection of its own: the read pool is query-only, and the writer
	// must stay free for this process's writes during a long copy. A
	// database opened read-only is read the way the store reads it.
	var db *sql.DB
	if s.readOnly != nil {
		db, err = openReadPool(ctx, s.path, false)
	} else if db, err = sql.Open("sqlite3", dsn(s.path, false)); err == nil {
		// A store opened as it is has not touched the file yet. Where
		// its -shm file cannot be created or grown (the database's own
		// disk is full), it is read the way a read-only store reads it,
		// and the copy may still go to another file system.
		var n int
		if qerr := db.QueryRowContext(ctx, "SELECT count(*) FROM sqlite_master").Scan(&n); isFull(qerr) {
			db.Close()
			db, err = openReadPool(ctx, s.path, false)
		}
	}
	if err != nil {
		return fmt.Errorf("backup: %w", describe(err))
	}
	defer db.Close()
	if _, err := db.ExecContext(ctx, "VACUUM INTO ?", tmpPath); err != nil {
		if isFull(err) { // the copy's file system: the database is only read
			return fmt.Errorf("backup: %w: cannot write %s in %s, nothing written (free some space or choose another directory)",
				errDiskFull, filepath.Base(abs), filepath.Dir(abs))
		}
		return fmt.Errorf("backup: vacuum into: %w", err)
	}
	if err := os.Chmod(tmpPath, 0o600); err != nil { // jobs carry commands and environments
		return fmt.Errorf("backup: %w", err)
	}
	if err := s.syncPath(tmpPath); err != nil {
		return fmt.Errorf("backup: %w", err)
	}
	// Stopped while the copy was synced (a large file takes a while):
	// nothing is written, as when stopped during the copy.
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("backup: %w", err)
	}
	if err := os.Link(tmpPath, abs); errors.Is(err, os.ErrExist) {
		// Created meanwhile (another backup to the same name): left alone.
		return fmt.Errorf("backup: %s exists; choose a new file", path)
	} else if err != nil {
		return fmt.Errorf("backup: %w", err)
	}
	return syncFile(filepath.Dir(abs))
}

// syncPath flushes the file at path to the device as the store flushes
// its log.
func (s *Store) syncPath(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	err = s.syncFile(f)
	return errors.Join(err, f.Close())
}

func syncFile(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	err = f.Sync()
	return errors.Join(err, f.Close())
}
