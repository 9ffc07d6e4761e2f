package sqlite_test

import (
	"bufio"
	"context"
	"database/sql"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/queuectl/queuectl/queue"
	"github.com/queuectl/queuectl/queue/sqlite"
	"github.com/queuectl/queuectl/queue/storetest"
)

func openAt(t *testing.T, path string) queue.Store {
	t.Helper()
	s, err := sqlite.Open(context.Background(), path)
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// migratedRaw makes a database with the current schema in a new directory
// and returns its path and a plain connection pool to it (no store around
// it), closed when the test ends if the test has not closed it.
func migratedRaw(t *testing.T) (string, *sql.DB) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "queue.db")
	openAt(t, path).Close()
	raw, err := sqlite.OpenRaw(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { raw.Close() })
	return path, raw
}

func TestConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) storetest.Opener {
		path := filepath.Join(t.TempDir(), "queue.db")
		withOracle(t, path) // every test checks the counters at its end
		return func(t *testing.T) queue.Store { return openAt(t, path) }
	})
}

// TestConformanceOneConnection runs the conformance suite on stores of one
// connection (Options.OneConnection): every store method must work when
// reads share the writer's connection, and none may read again while it
// holds a read open, which would wait for itself.
func TestConformanceOneConnection(t *testing.T) {
	storetest.Run(t, func(t *testing.T) storetest.Opener {
		path := filepath.Join(t.TempDir(), "queue.db")
		withOracle(t, path)
		return func(t *testing.T) queue.Store {
			s, err := sqlite.OpenWith(context.Background(), path, sqlite.Options{OneConnection: true})
			if err != nil {
				t.Fatalf("open: %v", err)
			}
			t.Cleanup(func() { s.Close() })
			return s
		}
	})
}

func TestOpenRefusesBadFiles(t *testing.T) {
	dir := t.TempDir()
	notDB := filepath.Join(dir, "notes.txt")
	content := []byte("this is not a database, it is a text file with enough bytes\n")
	if err := os.WriteFile(notDB, content, 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := sqlite.Open(context.Background(), notDB)
	if err == nil || !strings.Contains(err.Error(), "not a SQLite database") {
		t.Fatalf("want 'not a SQLite database', got %v", err)
	}
	if got, _ := os.ReadFile(notDB); string(got) != string(content) {
		t.Fatal("the file was changed")
	}
	if _, err := os.Stat(notDB + "-wal"); !errors.Is(err, os.ErrNotExist) {
		t.Fatal("a WAL file was created beside a file that is not a database")
	}

	_, err = sqlite.Open(context.Background(), dir)
	if want := "open " + dir + ": is a directory, not a database file"; err == nil || err.Error() != want {
		t.Fatalf("a directory: want %q, got %v", want, err)
	}

	_, err = sqlite.Open(context.Background(), filepath.Join(dir, "missing", "queue.db"))
	if err == nil || !strings.Contains(err.Error(), "missing") {
		t.Fatalf("missing directory: got %v", err)
	}

	if os.Geteuid() != 0 { // root may write anywhere
		ro := filepath.Join(dir, "ro")
		os.Mkdir(ro, 0o555)
		_, err = sqlite.Open(context.Background(), filepath.Join(ro, "queue.db"))
		if err == nil || !strings.Contains(err.Error(), "not writable") {
			t.Fatalf("read-only directory: got %v", err)
		}
	}
}

// TestOpenThroughALinkToANewFile opens a database through a symbolic link
// (relative, through a second link) to a file that does not exist yet: it
// is created writable, owner-only, with its log beside it; a link into a
// directory that does not exist is refused naming the link and its end.
func TestOpenThroughALinkToANewFile(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "data"), 0o700); err != nil {
		t.Fatal(err)
	}
	real := filepath.Join(dir, "data", "queue.db")
	if err := os.Symlink(filepath.Join("data", "queue.db"), filepath.Join(dir, "inner.db")); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "queue.db")
	if err := os.Symlink(filepath.Join(dir, "inner.db"), link); err != nil {
		t.Fatal(err)
	}
	s, err := sqlite.Open(ctx, link)
	if err != nil {
		t.Fatalf("open through a link to a new file: %v", err)
	}
	if _, err := queue.Enqueue(ctx, s, nil, []queue.NewJob{{ID: "a", Command: "true"}}, time.Now()); err != nil {
		t.Fatalf("enqueue through the link: %v", err)
	}
	s.Close()
	fi, err := os.Stat(real)
	if err != nil || fi.Mode().Perm() != 0o600 || fi.Size() == 0 {
		t.Fatalf("the link's file: %v, %v", fi, err)
	}
	if _, err := os.Lstat(link + "-wal"); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a log beside the link: %v", err)
	}
	if _, err := openAt(t, real).GetJob(ctx, "a"); err != nil {
		t.Fatalf("the job, read from the file itself: %v", err)
	}

	broken := filepath.Join(dir, "broken.db")
	if err := os.Symlink(filepath.Join(dir, "nowhere", "queue.db"), broken); err != nil {
		t.Fatal(err)
	}
	_, err = sqlite.Open(ctx, broken)
	if err == nil || !strings.Contains(err.Error(), broken) || !strings.Contains(err.Error(), filepath.Join(dir, "nowhere")) ||
		strings.Contains(err.Error(), "read-only") {
		t.Fatalf("a link into a missing directory: want an error naming the link and the directory, got %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "nowhere")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the missing directory was created: %v", err)
	}
}

// With MustExist a missing database is ErrNoDatabase, created neither at
// the path nor at the end of a link to a new file; one that exists opens.
func TestOpenMustExist(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	path := filepath.Join(dir, "queue.db")
	link := filepath.Join(dir, "link.db")
	if err := os.Symlink(path, link); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{path, link, filepath.Join(dir, "missing", "queue.db")} {
		if _, err := sqlite.OpenWith(ctx, p, sqlite.Options{MustExist: true}); !errors.Is(err, sqlite.ErrNoDatabase) {
			t.Fatalf("open %s that does not exist: %v; want ErrNoDatabase", p, err)
		}
		if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("open %s created the database: %v", p, err)
		}
	}
	// An empty file is no database either, and stays empty.
	if err := os.WriteFile(path, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := sqlite.OpenWith(ctx, path, sqlite.Options{MustExist: true}); !errors.Is(err, sqlite.ErrNoDatabase) {
		t.Fatalf("open an empty file: %v; want ErrNoDatabase", err)
	}
	if fi, err := os.Stat(path); err != nil || fi.Size() != 0 {
		t.Fatalf("the empty file after the open: %v %v", fi, err)
	}
	openAt(t, path)
	s, err := sqlite.OpenWith(ctx, link, sqlite.Options{MustExist: true})
	if err != nil {
		t.Fatalf("open a database that exists, through a link: %v", err)
	}
	s.Close()
}

func TestOpenRefusesNewerSchema(t *testing.T) {
	path, raw := migratedRaw(t)
	// Simulate a database written by a future binary.
	if _, err := raw.Exec("PRAGMA user_version = 999"); err != nil {
		t.Fatal(err)
	}
	raw.Close()
	_, err := sqlite.Open(context.Background(), path)
	if !errors.Is(err, queue.ErrSchemaNewer) {
		t.Fatalf("want ErrSchemaNewer, got %v", err)
	}
}

// Migrate reports the migrations it applied: all of them to a new file,
// the missing ones to an older schema, none to a current one.
func TestMigrateReportsWhatItApplied(t *testing.T) {
	ctx := context.Background()
	latest := sqlite.LatestVersion()
	dir := t.TempDir()
	fresh := filepath.Join(dir, "new.db")
	for _, want := range []int{latest, 0} {
		if n, err := sqlite.Migrate(ctx, fresh); err != nil || n != want {
			t.Fatalf("migrate %s: applied %d, %v; want %d", fresh, n, err, want)
		}
	}
	old := filepath.Join(dir, "old.db")
	if err := sqlite.MigrateTo(old, 11); err != nil {
		t.Fatal(err)
	}
	if n, err := sqlite.Migrate(ctx, old); err != nil || n != latest-11 {
		t.Fatalf("migrate from schema 11: applied %d, %v; want %d", n, err, latest-11)
	}
	raw, err := sqlite.OpenRaw(old)
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	v, err := sqlite.SchemaVersion(ctx, raw, latest)
	if err != nil || v != latest {
		t.Fatalf("schema version after migrate: %d, %v; want %d", v, err, latest)
	}
}

// With OneConnection a store opens one connection: what enqueue reads and
// writes goes through the writer's, and reads after the write see it. By
// default the readers have a connection of their own. A writer that also
// reads waits out a busy file in SQLite's busy handler as the readers'
// connections do (5 s), where the writer alone leaves the wait to its own
// loop (0).
func TestOneConnection(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		o    sqlite.Options
		want int
		busy int64
	}{
		{"default", sqlite.Options{}, 2, 0},
		{"one connection", sqlite.Options{OneConnection: true}, 1, 5000},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "queue.db")
			openAt(t, path).Close() // migrated, so that Open only checks
			s, err := sqlite.OpenWith(ctx, path, tc.o)
			if err != nil {
				t.Fatal(err)
			}
			now := time.Now().UTC()
			queues, err := queue.QueueOverrides(ctx, s)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := queue.Enqueue(ctx, s, queues, []queue.NewJob{{ID: "a", Command: "true"}}, now); err != nil {
				t.Fatal(err)
			}
			if j, err := s.GetJob(ctx, "a"); err != nil || j.State != queue.StatePending {
				t.Fatalf("the enqueued job reads back as %+v, %v", j, err)
			}
			if n := sqlite.Connections(s); n != tc.want {
				t.Errorf("%d connections open, want %d", n, tc.want)
			}
			if ms, err := sqlite.WriterPragma(s, "busy_timeout"); err != nil || ms != tc.busy {
				t.Errorf("the writer's busy timeout: %d ms, %v; want %d", ms, err, tc.busy)
			}
			if err := s.Close(); err != nil {
				t.Fatalf("close: %v", err)
			}
		})
	}
}

// A write whose context is cancelled must not take the store's only writer
// connection down with it.
func TestCancelledWriteKeepsStoreUsable(t *testing.T) {
	s := openAt(t, filepath.Join(t.TempDir(), "queue.db"))
	var jobs []*queue.Job
	for i := range 20000 {
		j, err := queue.NewJob{ID: "j" + strconv.Itoa(i), Command: "true"}.Resolve(queue.DefaultSettings(), time.Now())
		if err != nil {
			t.Fatal(err)
		}
		jobs = append(jobs, j)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.InsertJobs(ctx, jobs) }()
	cancel()
	<-done // either refused before it began, or committed whole
	if err := s.SetConfig(context.Background(), "max-retries", "4"); err != nil {
		t.Fatalf("store unusable after a cancelled write: %v", err)
	}
	n, err := s.ListJobs(context.Background(), queue.ListParams{})
	if err != nil {
		t.Fatal(err)
	}
	if len(n) != 0 && len(n) != len(jobs) {
		t.Fatalf("a cancelled batch stored %d of %d jobs", len(n), len(jobs))
	}
	cancelled, stop := context.WithCancel(context.Background())
	stop()
	if err := s.SetConfig(cancelled, "max-retries", "5"); !errors.Is(err, context.Canceled) {
		t.Fatalf("a write with a cancelled context must be refused, got %v", err)
	}
}

func sqliteOpen(path string) (queue.Store, error) { return sqlite.Open(context.Background(), path) }

// The database and the files beside it hold commands and environments:
// only their owner may read them, whatever the umask.
func TestFilesAreOwnerOnly(t *testing.T) {
	path := filepath.Join(t.TempDir(), "queue.db")
	s := openAt(t, path)
	ctx := context.Background()
	if _, err := queue.Enqueue(ctx, s, nil, []queue.NewJob{{Command: "true"}}, time.Now()); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Wakeups(ctx); err != nil { // creates the wake file
		t.Fatal(err)
	}
	for _, suffix := range []string{"", "-wal", "-shm", "-wake", "-lock"} {
		fi, err := os.Stat(path + suffix)
		if err != nil {
			t.Errorf("%s: %v", suffix, err)
			continue
		}
		if perm := fi.Mode().Perm(); perm&0o077 != 0 {
			t.Errorf("queue.db%s has mode %o, want 0600", suffix, perm)
		}
	}
}

// WriteStats counts every write transaction with the time its lock was
// held; a failed write that began counts too, one that was refused does not.
func TestWriteStatsCountTransactions(t *testing.T) {
	s, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "queue.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	before := s.WriteStats()
	for i := range 3 {
		if err := s.SetConfig(context.Background(), "max-retries", strconv.Itoa(i)); err != nil {
			t.Fatal(err)
		}
	}
	after := s.WriteStats()
	if n := after.Transactions - before.Transactions; n != 3 {
		t.Fatalf("3 writes counted as %d transactions", n)
	}
	if after.Held <= before.Held || after.Waited < before.Waited {
		t.Fatalf("held %v -> %v, waited %v -> %v: the lock was held and never waited for less", before.Held, after.Held, before.Waited, after.Waited)
	}
	// The holder's CPU is counted within the time held, on Linux.
	if cpu, held := after.HeldCPU-before.HeldCPU, after.Held-before.Held; cpu > held || cpu < 0 || (runtime.GOOS == "linux" && cpu == 0) {
		t.Fatalf("the holder's CPU %v while the lock was held %v", cpu, held)
	}
	cancelled, stop := context.WithCancel(context.Background())
	stop()
	s.SetConfig(cancelled, "max-retries", "9")
	if got := s.WriteStats().Transactions; got != after.Transactions {
		t.Fatalf("a refused write counted: %d transactions, want %d", got, after.Transactions)
	}
}

// TestSchemaVersionWaitsOutABusyFile reads the schema version, as Open
// does on the writer's connection (which does not wait in SQLite's busy
// handler), while another connection holds the file exclusively for a
// moment, as a process checkpointing the log as it closes does: the read
// waits for it instead of failing with "database is busy".
func TestSchemaVersionWaitsOutABusyFile(t *testing.T) {
	path, raw := migratedRaw(t)
	raw.SetMaxOpenConns(1)
	if _, err := raw.Exec("PRAGMA locking_mode = EXCLUSIVE"); err != nil {
		t.Fatal(err)
	}
	if _, err := raw.Exec("CREATE TABLE held (x)"); err != nil { // takes the file's lock, and keeps it
		t.Fatal(err)
	}
	writer, err := sql.Open("sqlite3", "file:"+path+"?_busy_timeout=0")
	if err != nil {
		t.Fatal(err)
	}
	defer writer.Close()
	released := make(chan struct{})
	go func() {
		defer close(released)
		time.Sleep(300 * time.Millisecond) // the holder's moment, which the read must outlast
		raw.Close()
	}()
	if _, err := sqlite.SchemaVersion(context.Background(), writer, 1000); err != nil {
		t.Fatalf("schema version while the file was busy: %v", err)
	}
	<-released
}

// A write waits, asleep, while another process holds the write lock, and
// goes on once that process dies (the kernel releases its flock).
func TestWriteWaitsForAnotherProcessesLock(t *testing.T) {
	path := filepath.Join(t.TempDir(), "queue.db")
	s := openAt(t, path)
	holder := exec.Command(os.Args[0], "-test.run=^$")
	holder.Env = append(os.Environ(), lockHolderEnv+"="+path+"-lock")
	holder.Stderr = os.Stderr
	stdin, err := holder.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	defer stdin.Close()
	out, err := holder.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := holder.Start(); err != nil {
		t.Fatal(err)
	}
	defer holder.Wait()
	defer holder.Process.Kill()
	if line, err := bufio.NewReader(out).ReadString('\n'); err != nil || line != "held\n" {
		t.Fatalf("holder: %q, %v", line, err)
	}
	done := make(chan error, 1)
	go func() { done <- s.SetConfig(context.Background(), "max-retries", "7") }()
	select {
	case err := <-done:
		t.Fatalf("the write went on while another process held the lock: %v", err)
	case <-time.After(300 * time.Millisecond): // a window in which it must not finish
	}
	holder.Process.Kill()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("write after the holder died: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the write still waits after the holder died")
	}
	if kv, err := s.GetConfig(context.Background()); err != nil || kv["max-retries"] != "7" {
		t.Fatalf("max-retries = %q, %v after the write", kv["max-retries"], err)
	}
}

// TestWriterReadsWithoutMemoryMap checks that the writer connection reads
// pages with pread: with a memory map, every other process's commit makes
// SQLite unmap and map the whole map again (docs/benchmarks.md, "The
// writer reads without a memory map").
func TestWriterReadsWithoutMemoryMap(t *testing.T) {
	s := openAt(t, filepath.Join(t.TempDir(), "queue.db")).(*sqlite.Store)
	if n, err := sqlite.WriterPragma(s, "mmap_size"); err != nil || n != 0 {
		t.Fatalf("writer's mmap_size = %d, %v; want 0", n, err)
	}
}

// A file the database refuses part-way (here a trigger refuses its
// recurring job) changes nothing.
func TestApplyConfigFailingLateChangesNothing(t *testing.T) {
	path := filepath.Join(t.TempDir(), "queue.db")
	s := openAt(t, path)
	raw, err := sqlite.OpenRaw(path)
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	if _, err := raw.Exec(`CREATE TRIGGER refuse BEFORE INSERT ON templates BEGIN SELECT RAISE(ABORT, 'refused by the test'); END`); err != nil {
		t.Fatal(err)
	}
	storetest.ApplyConfigFailingLate(t, s, &queue.Template{Name: "a", Queue: "web", Schedule: "@daily", TimeZone: "UTC", Command: "true",
		Overlap: queue.OverlapSkip, CatchUp: queue.CatchUpNone, Enabled: true}, "refused by the test")
}
