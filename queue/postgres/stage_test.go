package postgres_test

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/queuectl/queuectl/queue"
	"github.com/queuectl/queuectl/queue/postgres"
)

// An import decides a chunk's unique keys from one read made before the
// chunk. When another session takes one of those keys after that read,
// the chunk is stored as if enqueued one job at a time after that session:
// the import's job with the key is not added, its holder is named, and a
// job after it runs after the holder; the job counts stay true.
func TestImportChunkKeyTakenAfterRead(t *testing.T) {
	schema, u := newSchema(t)
	t.Cleanup(func() { checkJobTotals(t, schema) })
	s, other := open(t, u), open(t, u)
	imp := beginImport(t, s)
	took := false
	postgres.AfterChunkRead(imp, func() {
		if !took {
			took = true
			if err := other.InsertJobs(tctx(t), []*queue.Job{keyed(t, "theirs", "k", "")}); err != nil {
				t.Errorf("enqueue from another session: %v", err)
			}
		}
	})
	mine, next, free := keyed(t, "mine", "k", ""), keyed(t, "next", "", "", "mine"), keyed(t, "free", "k2", "")
	if err := imp.Stage(tctx(t), []*queue.Job{mine, next, free}); err != nil {
		t.Fatalf("stage: %v", err)
	}
	if err := imp.Commit(tctx(t)); err != nil {
		t.Fatalf("commit: %v", err)
	}
	if !took {
		t.Fatal("the import read no chunk")
	}
	if mine.ExistingID != "theirs" || free.ExistingID != "" {
		t.Fatalf("ExistingID: mine %q, free %q; want theirs, none", mine.ExistingID, free.ExistingID)
	}
	if _, err := s.GetJob(tctx(t), "mine"); err == nil {
		t.Fatal("the job whose key was taken was stored")
	}
	got, err := s.GetJob(tctx(t), "next")
	if err != nil || got.State != queue.StateWaiting || !slices.Equal(got.After, []string{"theirs"}) {
		t.Fatalf("next: %+v, %v; want waiting after [theirs]", got, err)
	}
	if got, err := s.GetJob(tctx(t), "free"); err != nil || got.State != queue.StatePending {
		t.Fatalf("free: %+v, %v; want pending", got, err)
	}
}

// The chunk taken back after a key was taken since the read is exactly
// what it inserted: a stored job whose id the import's job reused, whose
// key another session took meanwhile, stays as it was (an insert skipped
// on its key is never checked against its id).
func TestImportChunkTakenBackLeavesOtherJobs(t *testing.T) {
	schema, u := newSchema(t)
	t.Cleanup(func() { checkJobTotals(t, schema) })
	s, other := open(t, u), open(t, u)
	if err := s.InsertJobs(tctx(t), []*queue.Job{keyed(t, "x", "", "echo stored")}); err != nil {
		t.Fatal(err)
	}
	imp := beginImport(t, s)
	postgres.AfterChunkRead(imp, func() {
		if err := other.InsertJobs(tctx(t), []*queue.Job{keyed(t, "theirs", "k", "echo theirs")}); err != nil {
			t.Errorf("enqueue from another session: %v", err)
		}
	})
	mine := keyed(t, "x", "k", "echo mine")
	if err := imp.Stage(tctx(t), []*queue.Job{mine}); err != nil {
		t.Fatalf("stage: %v", err)
	}
	if err := imp.Commit(tctx(t)); err != nil {
		t.Fatalf("commit: %v", err)
	}
	if mine.ExistingID != "theirs" {
		t.Fatalf("ExistingID %q, want theirs", mine.ExistingID)
	}
	got, err := s.GetJob(tctx(t), "x")
	if err != nil || got.Command != "echo stored" || got.UniqueKey != "" {
		t.Fatalf("the stored job x: %+v, %v; want it as it was", got, err)
	}
}

// Two imports that take the same unique keys in opposite orders deadlock
// on the server, which rolls one back: its error is queue.ErrUnavailable
// (nothing of it was kept; made again it may succeed), and the other
// commits.
func TestImportsDeadlockingOnKeysAreRetryable(t *testing.T) {
	schema, u := newSchema(t)
	t.Cleanup(func() { checkJobTotals(t, schema) })
	s := open(t, u)
	a := beginImport(t, s)
	b := beginImport(t, s)
	if err := a.Stage(tctx(t), []*queue.Job{keyed(t, "a1", "k1", "")}); err != nil {
		t.Fatal(err)
	}
	if err := b.Stage(tctx(t), []*queue.Job{keyed(t, "b2", "k2", "")}); err != nil {
		t.Fatal(err)
	}
	second := make(chan error, 1)
	go func() { second <- a.Stage(tctx(t), []*queue.Job{keyed(t, "a2", "k2", "")}) }() // waits for b's k2
	errB := b.Stage(tctx(t), []*queue.Job{keyed(t, "b1", "k1", "")})                   // waits for a's k1: a deadlock
	if errB == nil {
		errB = b.Commit(tctx(t))
	} else {
		b.Abort(tctx(t))
	}
	errA := <-second
	if errA == nil {
		errA = a.Commit(tctx(t))
	}
	if (errA == nil) == (errB == nil) {
		t.Fatalf("want one import rolled back and one committed: %v; %v", errA, errB)
	}
	if err := errors.Join(errA, errB); !errors.Is(err, queue.ErrUnavailable) {
		t.Fatalf("the rolled back import's error is not ErrUnavailable: %v", err)
	}
}

// An import begun alone (as one rolled back for a deadlock is made again)
// starts once the import in progress has ended, and an import begun after
// it waits for it in turn: it cannot meet another import at their keys.
func TestImportAloneWaitsForTheOthers(t *testing.T) {
	schema, u := newSchema(t)
	t.Cleanup(func() { checkJobTotals(t, schema) })
	s := open(t, u)
	first := beginImport(t, s)
	if err := first.Stage(tctx(t), []*queue.Job{keyed(t, "f", "k", "")}); err != nil {
		t.Fatal(err)
	}
	type begun struct {
		imp queue.Import
		err error
	}
	// The imports begun below are aborted at the end, and one still
	// waiting to begin gives up, whatever the test found.
	var mu sync.Mutex
	var opened []queue.Import
	t.Cleanup(func() {
		mu.Lock()
		defer mu.Unlock()
		for _, imp := range opened {
			imp.Abort(context.Background())
		}
	})
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	begin := func(f func(context.Context) (queue.Import, error), to chan<- begun) {
		imp, err := f(ctx)
		if err == nil {
			mu.Lock()
			opened = append(opened, imp)
			mu.Unlock()
		}
		to <- begun{imp, err}
	}
	alone, after := make(chan begun, 1), make(chan begun, 1)
	go begin(s.BeginImportAlone, alone)
	watch := adminConn(t)
	waiting := func(n int) func() bool {
		return func() bool {
			var got int
			err := watch.QueryRow(tctx(t), `SELECT count(*) FROM pg_locks l JOIN pg_stat_activity a USING (pid)
				WHERE a.application_name = $1 AND l.locktype = 'advisory' AND NOT l.granted`, schema).Scan(&got)
			return err == nil && got == n
		}
	}
	waitFor(t, "the import alone to wait for the lock", 30*time.Second, waiting(1))
	go begin(s.BeginImport, after)
	waitFor(t, "the import after it to wait too", 30*time.Second, waiting(2))
	select {
	case b := <-alone:
		t.Fatalf("the import alone began beside one in progress: %v", b.err)
	default:
	}
	if err := first.Commit(tctx(t)); err != nil {
		t.Fatal(err)
	}
	b := <-alone
	if b.err != nil {
		t.Fatalf("begin alone: %v", b.err)
	}
	select {
	case c := <-after:
		t.Fatalf("an import began beside the one alone: %v", c.err)
	default:
	}
	if err := b.imp.Stage(tctx(t), []*queue.Job{keyed(t, "a", "k", "")}); err != nil {
		t.Fatal(err)
	}
	if err := b.imp.Commit(tctx(t)); err != nil {
		t.Fatal(err)
	}
	c := <-after
	if c.err != nil {
		t.Fatalf("begin after: %v", c.err)
	}
}

// keyed is a job with unique key key ("": none) and the given command
// ("": true), run after the jobs after names.
func keyed(t *testing.T, id, key, command string, after ...string) *queue.Job {
	t.Helper()
	if command == "" {
		command = "true"
	}
	j, err := queue.NewJob{ID: id, Command: command, UniqueKey: key, After: after}.Resolve(queue.DefaultSettings(), time.Now())
	if err != nil {
		t.Fatal(err)
	}
	return j
}

// beginImport begins an import on s, aborted at the test's end unless it
// ended.
func beginImport(t *testing.T, s *postgres.Store) queue.Import {
	t.Helper()
	imp, err := s.BeginImport(tctx(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { imp.Abort(context.Background()) })
	return imp
}
