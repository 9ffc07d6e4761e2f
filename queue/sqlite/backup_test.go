package sqlite_test

import (
	"context"
	"database/sql"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/queuectl/queuectl/internal/testfs"
	"github.com/queuectl/queuectl/queue/sqlite"
)

// The copy holds the jobs' commands and environments while it is written,
// so the partial file is its owner's only from the start, whatever the
// umask: a backup killed half-way leaves nothing others may read.
func TestBackupPartialFileIsPrivate(t *testing.T) {
	old := syscall.Umask(0o022)
	t.Cleanup(func() { syscall.Umask(old) })
	path := filepath.Join(t.TempDir(), "queue.db")
	s := seed(t, path, 1)
	defer s.Close()
	pad(t, path, 64) // enough pages that the copy takes a while to write

	dir := t.TempDir()
	done := make(chan error, 1)
	go func() { done <- s.(*sqlite.Store).Backup(context.Background(), filepath.Join(dir, "backup.db")) }()
	seen := 0
	for finished := false; !finished; {
		select {
		case err := <-done:
			if err != nil {
				t.Fatalf("backup: %v", err)
			}
			finished = true
		default:
		}
		entries, _ := os.ReadDir(dir)
		for _, e := range entries {
			if !strings.Contains(e.Name(), ".partial-") {
				continue
			}
			fi, err := e.Info()
			if err != nil {
				continue // renamed or removed meanwhile
			}
			seen++
			if perm := fi.Mode().Perm(); perm&0o077 != 0 {
				t.Fatalf("%s is mode %04o while the copy is written; want 0600", e.Name(), perm)
			}
		}
	}
	if seen == 0 {
		t.Fatal("the copy finished before its partial file was seen: make the database larger")
	}
	fi, err := os.Stat(filepath.Join(dir, "backup.db"))
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("backup: %v %v, want mode 0600", fi, err)
	}
}

// A copy that does not fit says so and where, one line, and leaves
// nothing behind.
func TestBackupDiskFull(t *testing.T) {
	path := filepath.Join(t.TempDir(), "queue.db")
	s := seed(t, path, 1)
	defer s.Close()
	pad(t, path, 4)
	dir := testfs.Small(t, "1m")
	err := s.(*sqlite.Store).Backup(context.Background(), filepath.Join(dir, "backup.db"))
	want := "backup: disk full: cannot write backup.db in " + dir + ", nothing written (free some space or choose another directory)"
	if err == nil || err.Error() != want {
		t.Fatalf("backup to a full disk: %v; want %q", err, want)
	}
	if left, _ := os.ReadDir(dir); len(left) != 0 {
		t.Fatalf("a failed backup left %v", left)
	}
}

// pad grows the database at path by mib MiB of random blobs.
func pad(t *testing.T, path string, mib int) {
	t.Helper()
	db, err := sql.Open("sqlite3", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(`CREATE TABLE pad(b BLOB);
		WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i+1 FROM n WHERE i < ?)
		INSERT INTO pad SELECT randomblob(1 << 20) FROM n`, mib); err != nil {
		t.Fatal(err)
	}
}

// A store opened as it is copies the schema it holds: a backup taken with
// a newer binary before an upgrade migrates neither the database nor the
// copy.
func TestBackupAsIsKeepsTheSchema(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	old := filepath.Join(dir, "old.db")
	if err := sqlite.MigrateTo(old, 11); err != nil {
		t.Fatal(err)
	}
	s, err := sqlite.OpenWith(ctx, old, sqlite.Options{MustExist: true, AsIs: true})
	if err != nil {
		t.Fatal(err)
	}
	copyPath := filepath.Join(dir, "copy.db")
	err = s.Backup(ctx, copyPath)
	s.Close()
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{old, copyPath} {
		raw, err := sqlite.OpenRaw(p)
		if err != nil {
			t.Fatal(err)
		}
		var v int
		err = raw.QueryRow("PRAGMA user_version").Scan(&v)
		raw.Close()
		if err != nil || v != 11 {
			t.Fatalf("%s: schema version %d, %v; want 11, as it was", p, v, err)
		}
	}
}

// A database on a full disk is still copied elsewhere, as the command that
// backs it up opens it (as it is): SQLite cannot create the -shm file there,
// and the failure is the source's, not the copy's. Copying it away is what
// an operator does before freeing space.
func TestBackupOfADatabaseOnAFullDisk(t *testing.T) {
	ctx := context.Background()
	dir := testfs.Small(t, "4m")
	path := filepath.Join(dir, "queue.db")
	seed(t, path, 30).Close() // a clean close removes the -wal and -shm files
	testfs.Fill(t, filepath.Join(dir, "filler"))
	s, err := sqlite.OpenWith(ctx, path, sqlite.Options{MustExist: true, AsIs: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	backup := filepath.Join(t.TempDir(), "backup.db")
	if err := s.Backup(ctx, backup); err != nil {
		t.Fatalf("backup of a database on a full disk to another one: %v", err)
	}
	b, err := sqlite.Open(ctx, backup)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if counts, err := b.CountJobs(ctx); err != nil || len(counts) != 1 || counts[0].N != 30 {
		t.Fatalf("the backup's jobs: %+v, %v; want 30", counts, err)
	}
}

// A database of an older schema that cannot be written (read-only media,
// a copy kept without write permission) is backed up as it is, as one
// that can be written is: backup applies no migration, so none is needed.
func TestBackupAsIsOfAReadOnlyOlderSchema(t *testing.T) {
	ctx := context.Background()
	dir := testfs.Small(t, "4m")
	old := filepath.Join(dir, "old.db")
	if err := sqlite.MigrateTo(old, 11); err != nil {
		t.Fatal(err)
	}
	testfs.ReadOnly(t, dir)
	s, err := sqlite.OpenWith(ctx, old, sqlite.Options{MustExist: true, AsIs: true})
	if err != nil {
		t.Fatalf("open a read-only database of schema 11 as it is: %v", err)
	}
	defer s.Close()
	copyPath := filepath.Join(t.TempDir(), "copy.db")
	if err := s.Backup(ctx, copyPath); err != nil {
		t.Fatal(err)
	}
	raw, err := sqlite.OpenRaw(copyPath)
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	var v int
	if err := raw.QueryRow("PRAGMA user_version").Scan(&v); err != nil || v != 11 {
		t.Fatalf("the copy's schema version %d, %v; want 11, as it was", v, err)
	}
}
