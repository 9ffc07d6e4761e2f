package postgres_test

import (
	"errors"
	"slices"
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
	mk := func(id, key string, after ...string) *queue.Job {
		j, err := queue.NewJob{ID: id, Command: "true", UniqueKey: key, After: after}.Resolve(queue.DefaultSettings(), time.Now())
		if err != nil {
			t.Fatal(err)
		}
		return j
	}
	imp, err := s.BeginImport(tctx(t))
	if err != nil {
		t.Fatal(err)
	}
	defer imp.Abort(tctx(t))
	took := false
	postgres.AfterChunkRead(imp, func() {
		if !took {
			took = true
			if err := other.InsertJobs(tctx(t), []*queue.Job{mk("theirs", "k")}); err != nil {
				t.Errorf("enqueue from another session: %v", err)
			}
		}
	})
	mine, next, free := mk("mine", "k"), mk("next", "", "mine"), mk("free", "k2")
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
	mk := func(id, key, command string) *queue.Job {
		j, err := queue.NewJob{ID: id, Command: command, UniqueKey: key}.Resolve(queue.DefaultSettings(), time.Now())
		if err != nil {
			t.Fatal(err)
		}
		return j
	}
	if err := s.InsertJobs(tctx(t), []*queue.Job{mk("x", "", "echo stored")}); err != nil {
		t.Fatal(err)
	}
	imp, err := s.BeginImport(tctx(t))
	if err != nil {
		t.Fatal(err)
	}
	defer imp.Abort(tctx(t))
	postgres.AfterChunkRead(imp, func() {
		if err := other.InsertJobs(tctx(t), []*queue.Job{mk("theirs", "k", "echo theirs")}); err != nil {
			t.Errorf("enqueue from another session: %v", err)
		}
	})
	mine := mk("x", "k", "echo mine")
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
	mk := func(id, key string) *queue.Job {
		j, err := queue.NewJob{ID: id, Command: "true", UniqueKey: key}.Resolve(queue.DefaultSettings(), time.Now())
		if err != nil {
			t.Fatal(err)
		}
		return j
	}
	a, err := s.BeginImport(tctx(t))
	if err != nil {
		t.Fatal(err)
	}
	defer a.Abort(tctx(t))
	b, err := s.BeginImport(tctx(t))
	if err != nil {
		t.Fatal(err)
	}
	defer b.Abort(tctx(t))
	if err := a.Stage(tctx(t), []*queue.Job{mk("a1", "k1")}); err != nil {
		t.Fatal(err)
	}
	if err := b.Stage(tctx(t), []*queue.Job{mk("b2", "k2")}); err != nil {
		t.Fatal(err)
	}
	second := make(chan error, 1)
	go func() { second <- a.Stage(tctx(t), []*queue.Job{mk("a2", "k2")}) }() // waits for b's k2
	errB := b.Stage(tctx(t), []*queue.Job{mk("b1", "k1")})                   // waits for a's k1: a deadlock
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
