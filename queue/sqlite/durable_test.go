package sqlite

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	sqlite3 "github.com/mattn/go-sqlite3"
	"github.com/queuectl/queuectl/queue"
)

// pendingJob is a new job, resolved as enqueue resolves one.
func pendingJob(t *testing.T, id string) *queue.Job {
	t.Helper()
	j, err := queue.NewJob{ID: id, Command: "true"}.Resolve(queue.DefaultSettings(), time.Now())
	if err != nil {
		t.Fatal(err)
	}
	return j
}

// A durable write flushes the write-ahead log before it returns, and only
// after it released the write lock, so other writers do not wait for the
// device; a write that acknowledges nobody flushes nothing.
func TestDurableWriteSyncsTheLogAfterTheLock(t *testing.T) {
	s, probe, path := probedStore(t)
	var synced []string
	var lockFree []bool
	s.syncFile = func(f *os.File) error {
		synced = append(synced, f.Name())
		free := free(t, probe) && s.mu.TryLock()
		if free {
			s.mu.Unlock()
		}
		lockFree = append(lockFree, free)
		return syncData(f)
	}
	insert := func(durable bool, key string) {
		t.Helper()
		err := s.write(context.Background(), durable, func(ctx context.Context, tx *sql.Tx) error {
			_, err := tx.Exec(`INSERT INTO config (key, value) VALUES (?, '1')`, key)
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	insert(false, "normal")
	if len(synced) != 0 {
		t.Fatalf("a write that acknowledges nobody synced %v", synced)
	}
	insert(true, "durable")
	if len(synced) != 1 || synced[0] != path+"-wal" {
		t.Fatalf("a durable write synced %v, want [%s]", synced, path+"-wal")
	}
	if !lockFree[0] {
		t.Fatal("the log was synced while a write lock was held")
	}
	s.syncFile = func(*os.File) error { return syscall.EIO }
	err := s.write(context.Background(), true, func(ctx context.Context, tx *sql.Tx) error {
		_, err := tx.Exec(`INSERT INTO config (key, value) VALUES ('failed', '1')`)
		return err
	})
	if !errors.Is(err, syscall.EIO) || !errors.Is(err, errNotDurable) {
		t.Fatalf("a failed sync returned %v, want EIO saying the change may not be durable", err)
	}
}

// An enqueue wakes other processes' idle workers as soon as it commits,
// not after the log's flush: the job's start does not wait for the device.
func TestEnqueueWakesWorkersBeforeTheFlush(t *testing.T) {
	ctx := context.Background()
	s, path := newStore(t)
	other, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	wakeups, err := other.Wakeups(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for len(wakeups) > 0 {
		<-wakeups
	}
	wokenFirst := false
	s.syncFile = func(f *os.File) error {
		select {
		case <-wakeups:
			wokenFirst = true
		case <-time.After(5 * time.Second):
		}
		return syncData(f)
	}
	if err := s.InsertJobs(ctx, []*queue.Job{pendingJob(t, "j")}); err != nil {
		t.Fatal(err)
	}
	if !wokenFirst {
		t.Fatal("the other process's workers were not woken before the log was flushed")
	}
}

// A database opened through a symbolic link has its log beside the real
// file, and that is the log a durable write syncs.
func TestDurableWriteSyncsTheLogOfALinkedDatabase(t *testing.T) {
	dir := t.TempDir()
	real := filepath.Join(dir, "real", "queue.db")
	if err := os.Mkdir(filepath.Dir(real), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(real, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "queue.db")
	if err := os.Symlink(real, link); err != nil {
		t.Fatal(err)
	}
	s, err := Open(context.Background(), link)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var synced []string
	s.syncFile = func(f *os.File) error {
		synced = append(synced, f.Name())
		return syncData(f)
	}
	if err := s.SetConfig(context.Background(), "max-retries", "4"); err != nil {
		t.Fatal(err)
	}
	if len(synced) != 1 || synced[0] != real+"-wal" {
		t.Fatalf("synced %v, want [%s]", synced, real+"-wal")
	}
}

// An import whose commit could not be synced is committed all the same:
// it is published, and an abort afterwards (what a failed import does)
// does not delete its jobs.
func TestImportCommitNotSyncedIsPublished(t *testing.T) {
	ctx := context.Background()
	s, _ := newStore(t)
	imp, err := s.BeginImport(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := imp.Stage(ctx, []*queue.Job{pendingJob(t, "j")}); err != nil {
		t.Fatal(err)
	}
	s.syncFile = func(*os.File) error { return syscall.EIO }
	if err := imp.Commit(ctx); !errors.Is(err, errNotDurable) {
		t.Fatalf("commit with a failed sync: %v, want it to say the change is stored", err)
	}
	if err := imp.Abort(ctx); err != nil {
		t.Fatal(err)
	}
	got, err := s.GetJob(ctx, "j")
	if err != nil {
		t.Fatalf("the committed import's job: %v", err)
	}
	if got.State != queue.StatePending {
		t.Fatalf("the committed import's job is %s, want pending", got.State)
	}
}

// A writer connection to a database SQLite could not put in WAL mode
// commits with synchronous=FULL: there is no log to sync afterwards.
func TestWriterWithoutWALCommitsFull(t *testing.T) {
	path := filepath.Join(t.TempDir(), "queue.db")
	drv := &sqlite3.SQLiteDriver{}
	conn, err := drv.Open("file:" + path + "?_journal_mode=DELETE&_synchronous=NORMAL")
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	c := conn.(*sqlite3.SQLiteConn)
	if err := fullUnlessWAL(c); err != nil {
		t.Fatal(err)
	}
	rows, err := c.Query("PRAGMA synchronous", nil)
	if err != nil {
		t.Fatal(err)
	}
	level := make([]driver.Value, 1)
	err = rows.Next(level)
	rows.Close()
	if err != nil || level[0] != int64(2) {
		t.Fatalf("synchronous = %v (%v), want 2 (FULL)", level[0], err)
	}
}
