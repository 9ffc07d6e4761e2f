package sqlite_test

import (
	"bufio"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/queuectl/queuectl/queue"
	"github.com/queuectl/queuectl/queue/sqlite"
)

// importChildEnv makes the test binary an importer that stages two chunks,
// says so and waits to be killed.
const importChildEnv = "QUEUECTL_TEST_IMPORT_CHILD"

// lockHolderEnv makes the test binary a process that takes the flock on
// the file it names, says so and waits to be killed.
const lockHolderEnv = "QUEUECTL_TEST_LOCK_HOLDER"

func TestMain(m *testing.M) {
	if path := os.Getenv(importChildEnv); path != "" {
		os.Exit(importChild(path))
	}
	if path := os.Getenv(lockHolderEnv); path != "" {
		os.Exit(lockHolder(path))
	}
	os.Exit(m.Run())
}

func lockHolder(path string) int {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err == nil {
		err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	fmt.Println("held")
	bufio.NewReader(os.Stdin).ReadString('\n') // until killed
	return 0
}

func importChild(path string) int {
	ctx := context.Background()
	s, err := sqlite.Open(ctx, path)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	imp, err := s.BeginImport(ctx)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	for c := range 2 {
		jobs := make([]*queue.Job, 100)
		for i := range jobs {
			jobs[i], _ = queue.NewJob{ID: fmt.Sprintf("c%d-%d", c, i), Command: "true"}.Resolve(queue.DefaultSettings(), time.Now())
		}
		if err := imp.Stage(ctx, jobs); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
	}
	// A chunk is written while the next is read: staging none waits for it.
	if err := imp.Stage(ctx, nil); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	fmt.Println("staged")
	bufio.NewReader(os.Stdin).ReadString('\n') // until killed
	return 0
}

func rawCount(t *testing.T, path, query string) int {
	t.Helper()
	raw, err := sqlite.OpenRaw(path)
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	var n int
	if err := raw.QueryRow(query).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// An importer killed between chunks leaves hidden staged jobs; the next
// process to open the database drops them, and the ids are free again.
func TestImportOfKilledProcessIsDropped(t *testing.T) {
	path := filepath.Join(t.TempDir(), "queue.db")
	openAt(t, path).Close()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), importChildEnv+"="+path)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	defer stdin.Close()
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	if line, err := bufio.NewReader(out).ReadString('\n'); err != nil || line != "staged\n" {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("child: %q, %v", line, err)
	}
	// While it lives, opening the database leaves its import alone.
	s := openAt(t, path)
	if n := rawCount(t, path, `SELECT count(*) FROM jobs WHERE state = 'staged'`); n != 200 {
		t.Fatalf("a live import lost its staged jobs: %d left", n)
	}
	s.Close()
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()

	s = openAt(t, path)
	if n := rawCount(t, path, `SELECT count(*) FROM jobs`) + rawCount(t, path, `SELECT count(*) FROM imports`); n != 0 {
		t.Fatalf("the killed import left %d rows", n)
	}
	if _, err := queue.Enqueue(context.Background(), s, nil, []queue.NewJob{{ID: "c0-0", Command: "true"}}, time.Now()); err != nil {
		t.Fatalf("the id of a dropped import is still taken: %v", err)
	}
}

// An import committed by a process that died before publishing every
// chunk is published by the next process to open the database.
func TestCommittedImportIsFinished(t *testing.T) {
	path, raw := migratedRaw(t)
	now := time.Now().UnixMicro()
	tx, err := raw.Begin()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(`INSERT INTO imports (id, committed) VALUES ('imp', 1)`); err != nil {
		t.Fatal(err)
	}
	for i := range 25_000 { // more than two chunks
		state := "staged"
		if i < 10_000 {
			state = "pending" // the chunk published before the crash
		}
		_, err := tx.Exec(`INSERT INTO jobs (id, queue, command, state, max_retries, backoff_base, max_backoff_us,
			run_at, created_at, updated_at, import_id) VALUES (?, 'default', 'true', ?, 3, 2, 3600000000, ?, ?, ?, ?)`,
			fmt.Sprintf("j%d", i), state, now, now, now, map[bool]any{true: "imp", false: nil}[state == "staged"])
		if err != nil {
			t.Fatal(err)
		}
	}
	// The publishing transaction counted its chunk.
	if _, err := tx.Exec(`INSERT INTO counters (queue, kind, key, le_us, n, sum_us) VALUES ('default', 'jobs', 'pending', 0, 10000, 0)`); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	raw.Close()
	s := openAt(t, path)
	counts, err := s.CountJobs(context.Background())
	if err != nil || len(counts) != 1 || counts[0].State != queue.StatePending || counts[0].N != 25_000 {
		t.Fatalf("after recovery: %+v, %v; want 25000 pending", counts, err)
	}
	if n := rawCount(t, path, `SELECT count(*) FROM imports`); n != 0 {
		t.Fatalf("%d imports left", n)
	}
}

// storeBeside opens a store on a migrated database that raw also reaches,
// as a long-running process holds it while others write.
func storeBeside(t *testing.T) (path string, raw *sql.DB, s *sqlite.Store) {
	t.Helper()
	path, raw = migratedRaw(t)
	s, err := sqlite.Open(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return path, raw, s
}

// deadImport records through raw an import whose process died, committed
// or not, with the staged jobs ids.
func deadImport(t *testing.T, raw *sql.DB, id string, committed bool, ids ...string) {
	t.Helper()
	if _, err := raw.Exec(`INSERT INTO imports (id, committed) VALUES (?, ?)`, id, committed); err != nil {
		t.Fatal(err)
	}
	now := time.Now().UnixMicro()
	for _, jid := range ids {
		_, err := raw.Exec(`INSERT INTO jobs (id, queue, command, state, max_retries, backoff_base, max_backoff_us,
			run_at, created_at, updated_at, import_id) VALUES (?, 'default', 'true', 'staged', 3, 2, 3600000000, ?, ?, ?, ?)`,
			jid, now, now, now, id)
		if err != nil {
			t.Fatal(err)
		}
	}
}

// A process that keeps the database open (a worker, a service) finishes,
// as it tidies, the imports whose process died after it opened it: a
// committed one is published, an uncommitted one dropped. Before, their
// jobs stayed hidden, and their ids and keys taken, until another process
// opened the database.
func TestTidyFinishesImportsOfDeadProcesses(t *testing.T) {
	path, raw, s := storeBeside(t)
	deadImport(t, raw, "done", true, "done-0", "done-1", "done-2", "done-3", "done-4")
	deadImport(t, raw, "gone", false, "gone-0", "gone-1", "gone-2")
	done, err := s.Tidy(context.Background())
	if err != nil || len(done) != 1 || done[0] != "finished 2 import(s) whose process died" {
		t.Fatalf("tidy: %q, %v", done, err)
	}
	counts, err := s.CountJobs(context.Background())
	if err != nil || len(counts) != 1 || counts[0].State != queue.StatePending || counts[0].N != 5 {
		t.Fatalf("after tidying: %+v, %v; want the committed import's 5 jobs pending", counts, err)
	}
	if n := rawCount(t, path, `SELECT count(*) FROM jobs`) + rawCount(t, path, `SELECT count(*) FROM imports`); n != 5 {
		t.Fatalf("%d rows left, want the 5 published jobs", n)
	}
	if done, err := s.Tidy(context.Background()); err != nil || len(done) != 0 {
		t.Fatalf("tidy with nothing to do: %q, %v", done, err)
	}
}

// An import whose publishing fails after its commit reports that its jobs
// are stored (queue.ErrPublishing), even when the failure is the kind that
// leaves a change undone (busy): importing it again would add its jobs
// twice. Tidying then publishes them.
func TestPublishFailureAfterCommitSaysStored(t *testing.T) {
	_, raw, s := storeBeside(t)
	ctx := context.Background()
	imp, err := s.BeginImport(ctx)
	if err != nil {
		t.Fatal(err)
	}
	j, _ := queue.NewJob{ID: "j", Command: "true"}.Resolve(queue.DefaultSettings(), time.Now())
	if err := imp.Stage(ctx, []*queue.Job{j}); err != nil {
		t.Fatal(err)
	}
	if _, err := raw.Exec(`CREATE TRIGGER no_publish BEFORE UPDATE OF state ON jobs WHEN old.state = 'staged'
		BEGIN SELECT RAISE(ABORT, 'publishing refused'); END`); err != nil {
		t.Fatal(err)
	}
	if err := imp.Commit(ctx); !errors.Is(err, queue.ErrPublishing) {
		t.Fatalf("commit whose publishing failed: %v, want ErrPublishing", err)
	}
	if _, err := raw.Exec(`DROP TRIGGER no_publish`); err != nil {
		t.Fatal(err)
	}
	if done, err := s.Tidy(ctx); err != nil || len(done) != 1 {
		t.Fatalf("tidy: %q, %v", done, err)
	}
	if got, err := s.GetJob(ctx, "j"); err != nil || got.State != queue.StatePending {
		t.Fatalf("after tidying: %+v, %v; want j pending", got, err)
	}
}

// An import that cannot be finished now (its lock file cannot be opened)
// leaves the other dead imports to be finished, and is reported.
func TestTidyFinishesOtherImportsPastOneThatFails(t *testing.T) {
	path, raw, s := storeBeside(t)
	deadImport(t, raw, "a-stuck", true, "a-stuck-job")
	deadImport(t, raw, "b-done", true, "b-done-job")
	if err := os.Mkdir(path+"-import-a-stuck", 0o700); err != nil { // no lock file can be opened there
		t.Fatal(err)
	}
	done, err := s.Tidy(context.Background())
	if err == nil || len(done) != 1 {
		t.Fatalf("tidy: %q, %v; want one import finished and an error for the other", done, err)
	}
	if got, err := s.GetJob(context.Background(), "b-done-job"); err != nil || got.State != queue.StatePending {
		t.Fatalf("the import after the stuck one: %+v, %v; want its job pending", got, err)
	}
}
