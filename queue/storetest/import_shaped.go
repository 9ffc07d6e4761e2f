package storetest

import (
	"errors"
	"strings"
	"testing"

	"github.com/queuectl/queuectl/queue"
)

func after(ids ...string) func(n *queue.NewJob) { return func(n *queue.NewJob) { n.After = ids } }

func keyed(key string) func(n *queue.NewJob) { return func(n *queue.NewJob) { n.UniqueKey = key } }

// A bulk import takes jobs with dependencies: on stored jobs, or on jobs
// the same import stages (not another one's); one naming no such job
// fails the commit, naming both. Each starts as
// its dependencies decide once the import is visible, including a
// dependency that finished while the import was open: no job is left
// waiting for a job that already completed.
func testImportAfter(t *testing.T, open Opener) {
	s, worker := open(t), open(t)
	deadJob(t, s, "dead", "default")
	insert(t, s, job(t, "done", nil))
	finish(t, s, claim(t, s, "w", 1, t0)[0], "w", succeeded(t0, ""), t0)
	insert(t, s, job(t, "run", nil))
	running := claim(t, s, "w", 1, t0)

	shaped := func() []*queue.Job {
		return []*queue.Job{
			job(t, "first", nil),
			job(t, "then", after("first", "done")),
			job(t, "ready", after("done")),
			job(t, "doomed", after("dead")),
			job(t, "onrun", after("run")),
		}
	}
	other := begin(t, s)
	stage(t, other, []*queue.Job{job(t, "theirs", nil)})
	imp := begin(t, s)
	stage(t, imp, []*queue.Job{job(t, "x", after("theirs"))})
	err := imp.Commit(ctx(t))
	if !errors.Is(err, queue.ErrInvalid) || !containsQuoted(err, "x") || !containsQuoted(err, "theirs") {
		t.Fatalf("after a job another import staged: want ErrInvalid naming both, got %v", err)
	}
	if err := imp.Abort(ctx(t)); err != nil {
		t.Fatal(err)
	}
	if err := other.Abort(ctx(t)); err != nil {
		t.Fatal(err)
	}

	imp = begin(t, s)
	stage(t, imp, shaped())
	stage(t, imp, []*queue.Job{job(t, "fine", nil), job(t, "bad", after("first", "nope"))})
	err = imp.Commit(ctx(t))
	if !errors.Is(err, queue.ErrInvalid) || !containsQuoted(err, "bad") || !containsQuoted(err, "nope") {
		t.Fatalf("after an unknown job: want ErrInvalid naming the job and the id, got %v", err)
	}
	if err := imp.Abort(ctx(t)); err != nil {
		t.Fatal(err)
	}
	checkVisible(t, s, 3, "first")

	imp = begin(t, s)
	stage(t, imp, shaped())
	// The job onrun waits for completes while the import is open, from
	// another handle: its settle cannot see the staged onrun.
	finish(t, worker, running[0], "w", succeeded(t0, ""), t0)
	if err := imp.Commit(ctx(t)); err != nil {
		t.Fatalf("commit: %v", err)
	}
	for id, want := range map[string]queue.State{"first": queue.StatePending, "then": queue.StateWaiting,
		"ready": queue.StatePending, "doomed": queue.StateCancelled, "onrun": queue.StatePending} {
		if got := get(t, s, id); got.State != want {
			t.Errorf("%s: %s (%q), want %s", id, got.State, got.Error, want)
		}
	}
	if got := get(t, s, "doomed"); got.Error != "dependency dead ended dead" {
		t.Errorf("doomed: error %q", got.Error)
	}
	if got := get(t, s, "then"); !equal(got.After, []string{"done", "first"}) {
		t.Errorf("then: after %v", got.After)
	}
	// Its dependency in the file completes: then is released like any job.
	c := claim(t, s, "w", 10, t0)
	for _, j := range c {
		finish(t, s, j, "w", succeeded(t0, ""), t0)
	}
	if got := get(t, s, "then"); got.State != queue.StatePending {
		t.Errorf("then, once first completed: %s", got.State)
	}
}

// A job of a bulk import whose unique key an unfinished job holds, stored
// or staged earlier by the same import, is not staged: ExistingID names
// the holder, as Enqueue does.
func testImportUniqueKey(t *testing.T, open Opener) {
	s := open(t)
	insert(t, s, job(t, "held", keyed("k1")))
	imp := begin(t, s)
	a, b, c, d := job(t, "a", keyed("k1")), job(t, "b", keyed("k2")), job(t, "c", keyed("k2")), job(t, "d", keyed("k3"))
	stage(t, imp, []*queue.Job{a, b})
	stage(t, imp, []*queue.Job{c, d})
	if a.ExistingID != "held" || b.ExistingID != "" || c.ExistingID != "b" || d.ExistingID != "" {
		t.Fatalf("ExistingID: a %q b %q c %q d %q; want held, none, b, none", a.ExistingID, b.ExistingID, c.ExistingID, d.ExistingID)
	}
	if err := imp.Commit(ctx(t)); err != nil {
		t.Fatalf("commit: %v", err)
	}
	checkVisible(t, s, 3, "a")
	if _, err := s.GetJob(ctx(t), "c"); !errors.Is(err, queue.ErrNotFound) {
		t.Fatalf("the duplicate in the import was stored: %v", err)
	}
	if got := get(t, s, "b"); got.UniqueKey != "k2" || got.State != queue.StatePending {
		t.Fatalf("b: %+v", got)
	}
	// An aborted import holds no key.
	imp = begin(t, s)
	stage(t, imp, []*queue.Job{job(t, "e", keyed("k4"))})
	if err := imp.Abort(ctx(t)); err != nil {
		t.Fatal(err)
	}
	f := job(t, "f", keyed("k4"))
	insert(t, s, f)
	if f.ExistingID != "" {
		t.Fatalf("key of an aborted import still held by %q", f.ExistingID)
	}
}

// A job after a job of the same batch or import that was not added,
// because another job held its unique key, runs after the holder (whose
// id the caller got in its place), in a later chunk too; before, the
// batch or import failed naming a job that does not exist.
func testAfterAJobNotAdded(t *testing.T, open Opener) {
	s := open(t)
	insert(t, s, job(t, "held", keyed("k1")))
	after := func(id string, deps ...string) *queue.Job {
		return job(t, id, func(n *queue.NewJob) { n.After = deps })
	}
	dup, next, both := job(t, "dup", keyed("k1")), after("next", "dup"), after("both", "dup", "held")
	insert(t, s, dup, next, both)
	if dup.ExistingID != "held" {
		t.Fatalf("dup.ExistingID %q, want held", dup.ExistingID)
	}
	for _, id := range []string{"next", "both"} {
		if got := get(t, s, id); got.State != queue.StateWaiting || !equal(got.After, []string{"held"}) {
			t.Fatalf("%s: state %s, after %v; want waiting after [held]", id, got.State, got.After)
		}
	}
	// Alone, a batch naming a job that was never added still fails.
	if err := s.InsertJobs(ctx(t), []*queue.Job{after("lone", "dup")}); err == nil {
		t.Fatal("a job after a job that exists in no batch of its own was stored")
	}
	// A job added later in the batch under the id of one not added is the
	// one a later job names.
	insert(t, s, job(t, "again", keyed("k1")), job(t, "again", nil), after("then", "again"))
	if got := get(t, s, "then"); !equal(got.After, []string{"again"}) {
		t.Fatalf("then, after an id taken again in the batch: after %v, want [again]", got.After)
	}

	imp := begin(t, s)
	dup2 := job(t, "dup2", keyed("k1"))
	stage(t, imp, []*queue.Job{dup2, job(t, "dup3", keyed("k1"))})
	stage(t, imp, []*queue.Job{job(t, "dup3", nil)}) // a plain job takes the id
	late := after("late", "dup2")
	stage(t, imp, []*queue.Job{late, after("later", "dup3")})
	if err := imp.Commit(ctx(t)); err != nil {
		t.Fatalf("commit: %v", err)
	}
	if got := get(t, s, "late"); got.State != queue.StateWaiting || !equal(got.After, []string{"held"}) {
		t.Fatalf("late, after a job of an earlier chunk not added: state %s, after %v", got.State, got.After)
	}
	if got := get(t, s, "later"); !equal(got.After, []string{"dup3"}) {
		t.Fatalf("later, after an id a plain job took in a later chunk: after %v, want [dup3]", got.After)
	}
}

// An import's job may run after a job the import stages later (list
// --json prints the newest first): it waits for it once the import is
// visible, or for its holder when that job was not added (its unique key
// held). Jobs of an import that wait for each other fail the commit,
// naming them, and leave nothing.
func testImportAfterLater(t *testing.T, open Opener) {
	s := open(t)
	insert(t, s, job(t, "held", func(n *queue.NewJob) { n.UniqueKey, n.Queue = "k", "elsewhere" }))
	imp := begin(t, s)
	stage(t, imp, []*queue.Job{job(t, "last", after("middle")), job(t, "other", after("dup"))})
	stage(t, imp, []*queue.Job{job(t, "middle", after("first")), job(t, "dup", keyed("k"))})
	stage(t, imp, []*queue.Job{job(t, "first", nil)})
	if err := imp.Commit(ctx(t)); err != nil {
		t.Fatalf("commit: %v", err)
	}
	for id, want := range map[string]struct {
		state queue.State
		after []string
	}{
		"last": {queue.StateWaiting, []string{"middle"}}, "middle": {queue.StateWaiting, []string{"first"}},
		"first": {queue.StatePending, nil}, "other": {queue.StateWaiting, []string{"held"}},
	} {
		if got := get(t, s, id); got.State != want.state || !equal(got.After, want.after) {
			t.Errorf("%s: %s after %v, want %s after %v", id, got.State, got.After, want.state, want.after)
		}
	}
	// They run in order: first, then middle, then last.
	for _, id := range []string{"first", "middle", "last"} {
		got := claim(t, s, "w", 10, t0, "default")
		if len(got) != 1 || got[0].ID != id {
			t.Fatalf("claim: %v, want %s alone", ids(got), id)
		}
		finish(t, s, got[0], "w", succeeded(t0, ""), t0)
	}

	// A job before its dependency in the file, which runs after a job
	// cancelled, is cancelled with it once visible, not left waiting.
	insert(t, s, job(t, "gone", func(n *queue.NewJob) { n.Queue = "elsewhere" }))
	if _, err := s.CancelJob(ctx(t), "gone", t0); err != nil {
		t.Fatal(err)
	}
	imp = begin(t, s)
	stage(t, imp, []*queue.Job{job(t, "a", after("b"))})
	stage(t, imp, []*queue.Job{job(t, "b", after("gone"))})
	if err := imp.Commit(ctx(t)); err != nil {
		t.Fatalf("commit: %v", err)
	}
	// The same a whole chunk of other jobs apart: a store may make the
	// import visible a chunk at a time.
	imp = begin(t, s)
	stage(t, imp, []*queue.Job{job(t, "a2", after("b2"))})
	stage(t, imp, chunkOf(t, "fill", queue.ImportChunk))
	stage(t, imp, []*queue.Job{job(t, "b2", after("gone"))})
	if err := imp.Commit(ctx(t)); err != nil {
		t.Fatalf("commit: %v", err)
	}
	for _, id := range []string{"a", "b", "a2", "b2"} {
		if got := get(t, s, id); got.State != queue.StateCancelled {
			t.Errorf("%s, after a cancelled job: %s, want cancelled", id, got.State)
		}
	}
	// A job cancelled as it is staged (a dependency cancelled) that also
	// names a job the file never holds fails the commit like any other.
	imp = begin(t, s)
	stage(t, imp, []*queue.Job{job(t, "c", after("gone", "never"))})
	err := imp.Commit(ctx(t))
	if !errors.Is(err, queue.ErrInvalid) || !containsQuoted(err, "c") || !containsQuoted(err, "never") {
		t.Fatalf("a cancelled job after a job never staged: want ErrInvalid naming both, got %v", err)
	}
	if err := imp.Abort(ctx(t)); err != nil {
		t.Fatal(err)
	}

	imp = begin(t, s)
	stage(t, imp, []*queue.Job{job(t, "x", after("y")), job(t, "free", nil)})
	stage(t, imp, []*queue.Job{job(t, "y", after("z")), job(t, "z", after("x"))})
	err = imp.Commit(ctx(t))
	if !errors.Is(err, queue.ErrInvalid) || !strings.Contains(err.Error(), "wait for each other") || !containsQuoted(err, "x") ||
		!containsQuoted(err, "y") || !containsQuoted(err, "z") {
		t.Fatalf("jobs waiting for each other: want ErrInvalid naming the cycle, got %v", err)
	}
	if err := imp.Abort(ctx(t)); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"x", "y", "z", "free"} {
		if _, err := s.GetJob(ctx(t), id); !errors.Is(err, queue.ErrNotFound) {
			t.Fatalf("%s of a refused import: %v", id, err)
		}
	}
}

// A job an open import cancelled as it staged it (a dependency dead) holds
// no unique key, as one cancelled at enqueue holds none: a dead job with
// that key may be retried meanwhile, and once the import commits the
// retried job runs and the import's job stays cancelled.
func testImportCancelledJobHoldsNoKey(t *testing.T, open Opener) {
	s := open(t)
	insert(t, s, job(t, "d", func(n *queue.NewJob) { n.MaxRetries, n.Queue, n.UniqueKey = ptr(0), "kq", "k" }))
	finish(t, s, claim(t, s, "w", 1, t0, "kq")[0], "w", failed(t0), t0)
	deadJob(t, s, "gone", "elsewhere")
	imp := begin(t, s)
	c := job(t, "c", func(n *queue.NewJob) { n.UniqueKey, n.After = "k", []string{"gone"} })
	stage(t, imp, []*queue.Job{c})
	if c.ExistingID != "" {
		t.Fatalf("c not staged: held by %q", c.ExistingID)
	}
	if _, err := s.RetryJobs(ctx(t), queue.RetryParams{IDs: []string{"d"}, Now: t0}); err != nil {
		t.Fatalf("retry of a dead job whose key only a cancelled staged job has: %v", err)
	}
	if err := imp.Commit(ctx(t)); err != nil {
		t.Fatalf("commit: %v", err)
	}
	if got := get(t, s, "d"); got.State != queue.StatePending {
		t.Errorf("d: %s, want pending", got.State)
	}
	if got := get(t, s, "c"); got.State != queue.StateCancelled {
		t.Errorf("c: %s, want cancelled", got.State)
	}
}

// A job an import has staged but not committed is no job to an enqueue,
// as to every reader: a job enqueued after it is refused as after an
// unknown id. Taking it would leave that job waiting for ever once the
// import is aborted (or its process killed), for a job never added.
func testAfterAStagedJob(t *testing.T, open Opener) {
	s, other := open(t), open(t)
	imp := begin(t, s)
	defer imp.Abort(ctx(t))
	stage(t, imp, []*queue.Job{job(t, "staged", nil)})
	stage(t, imp, []*queue.Job{job(t, "staged2", keyed("k"))})
	for _, id := range []string{"staged", "staged2"} {
		err := other.InsertJobs(ctx(t), []*queue.Job{job(t, "next", after(id))})
		if !errors.Is(err, queue.ErrInvalid) || !containsQuoted(err, id) {
			t.Fatalf("enqueue after %s, a job of an import not committed: %v; want ErrInvalid naming it", id, err)
		}
	}
	if err := imp.Abort(ctx(t)); err != nil {
		t.Fatalf("abort: %v", err)
	}
	checkVisible(t, s, 0, "next")
}
