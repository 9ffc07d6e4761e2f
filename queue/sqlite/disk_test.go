package sqlite_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/queuectl/queuectl/internal/testfs"
	"github.com/queuectl/queuectl/queue"
	"github.com/queuectl/queuectl/queue/sqlite"
)

// seed opens (creating) the database at path with n jobs.
func seed(t *testing.T, path string, n int) queue.Store {
	t.Helper()
	s, err := sqlite.Open(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	jobs := make([]queue.NewJob, n)
	for i := range jobs {
		jobs[i] = queue.NewJob{Command: "true"}
	}
	if _, err := queue.Enqueue(context.Background(), s, nil, jobs, time.Now()); err != nil {
		t.Fatal(err)
	}
	return s
}

// checkReadOnly opens the database at path and asserts that the read
// commands' store calls see want jobs, that a write fails naming the
// database, changing nothing, and that a backup copies every job.
func checkReadOnly(t *testing.T, path string, want int) {
	t.Helper()
	ctx := context.Background()
	s, err := sqlite.Open(ctx, path)
	if err != nil {
		t.Fatalf("open a database that cannot be written: %v", err)
	}
	defer s.Close()
	jobs, err := s.ListJobs(ctx, queue.ListParams{})
	if err != nil || len(jobs) != want {
		t.Fatalf("list: %d jobs, %v; want %d", len(jobs), err, want)
	}
	if _, err := s.GetJob(ctx, jobs[0].ID); err != nil {
		t.Fatalf("show: %v", err)
	}
	counts, err := s.CountJobs(ctx)
	if err != nil || len(counts) != 1 || counts[0].N != want {
		t.Fatalf("status: %+v, %v", counts, err)
	}
	_, err = queue.Enqueue(ctx, s, nil, []queue.NewJob{{ID: "new", Command: "true"}}, time.Now())
	if err == nil || !strings.Contains(err.Error(), "read-only") || !strings.Contains(err.Error(), path) {
		t.Fatalf("a write to a read-only database: want an error naming it, got %v", err)
	}
	if _, err := s.GetJob(ctx, "new"); !errors.Is(err, queue.ErrNotFound) {
		t.Fatalf("the refused job is stored: %v", err)
	}
	// A backup only reads the database.
	backup := filepath.Join(t.TempDir(), "backup.db")
	if err := s.Backup(ctx, backup); err != nil {
		t.Fatalf("backup of a database that cannot be written: %v", err)
	}
	b, err := sqlite.Open(ctx, backup)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if counts, err := b.CountJobs(ctx); err != nil || len(counts) != 1 || counts[0].N != want {
		t.Fatalf("the backup's jobs: %+v, %v; want %d", counts, err, want)
	}
}

func TestReadOnlyFilesystem(t *testing.T) {
	dir := testfs.Small(t, "8m")
	path := filepath.Join(dir, "queue.db")
	seed(t, path, 30).Close() // a clean close removes the -wal and -shm files
	testfs.ReadOnly(t, dir)
	checkReadOnly(t, path, 30)
}

// A copy taken while the database was open keeps its last transactions in
// the -wal file: read-only, they must still be seen.
func TestReadOnlyFilesystemWithWAL(t *testing.T) {
	src := filepath.Join(t.TempDir(), "queue.db")
	defer seed(t, src, 30).Close()
	dir := testfs.Small(t, "8m")
	path := filepath.Join(dir, "queue.db")
	for _, suffix := range []string{"", "-wal", "-shm"} {
		testfs.Copy(t, src+suffix, path+suffix)
	}
	if fi, err := os.Stat(path + "-wal"); err != nil || fi.Size() == 0 {
		t.Fatalf("the copy should carry a -wal with data: %v", err)
	}
	testfs.ReadOnly(t, dir)
	checkReadOnly(t, path, 30)
}

// Without root, file modes make the database read-only (root ignores
// them, so there the filesystem tests above cover the same code).
func TestReadOnlyFileAndDirectory(t *testing.T) {
	if os.Geteuid() == 0 {
		t.Skip("root writes files whatever their mode; TestReadOnlyFilesystem covers this as root")
	}
	dir := filepath.Join(t.TempDir(), "ro")
	os.Mkdir(dir, 0o700)
	path := filepath.Join(dir, "queue.db")
	seed(t, path, 30).Close()
	os.Chmod(path, 0o444)
	os.Chmod(dir, 0o555)
	t.Cleanup(func() { os.Chmod(dir, 0o700) })
	checkReadOnly(t, path, 30)
}

// A write that finds the disk full fails with one line that says so and
// names the database, and stores nothing; once space is freed the store
// works again.
func TestDiskFull(t *testing.T) {
	dir := testfs.Small(t, "4m")
	path := filepath.Join(dir, "queue.db")
	s := seed(t, path, 30)
	defer s.Close()
	filler := filepath.Join(dir, "filler")
	testfs.Fill(t, filler)

	ctx := context.Background()
	big := make([]queue.NewJob, 2000)
	for i := range big {
		big[i] = queue.NewJob{Command: strings.Repeat("echo lots of output; ", 20)}
	}
	_, err := queue.Enqueue(ctx, s, nil, big, time.Now())
	if err == nil {
		t.Fatal("a write on a full disk succeeded")
	}
	msg := err.Error()
	if !strings.Contains(msg, "disk full") || !strings.Contains(msg, path) || strings.Contains(msg, "\n") {
		t.Fatalf("want one line saying disk full and naming %s, got %q", path, msg)
	}
	counts, err := s.CountJobs(ctx)
	if err != nil || len(counts) != 1 || counts[0].N != 30 {
		t.Fatalf("after the failed write: %+v, %v; want the 30 jobs only", counts, err)
	}
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	if _, err := queue.Enqueue(ctx, s, nil, big[:10], time.Now()); err != nil {
		t.Fatalf("after freeing space: %v", err)
	}
	raw, err := sqlite.OpenRaw(path)
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	var check string
	if err := raw.QueryRow("PRAGMA integrity_check").Scan(&check); err != nil || check != "ok" {
		t.Fatalf("integrity_check: %q, %v", check, err)
	}
}
