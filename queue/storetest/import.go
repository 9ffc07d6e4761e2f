package storetest

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/queuectl/queuectl/queue"
)

// chunkOf builds n resolved jobs with ids prefix0..prefix(n-1).
func chunkOf(t *testing.T, prefix string, n int) []*queue.Job {
	t.Helper()
	out := make([]*queue.Job, n)
	for i := range out {
		out[i] = job(t, fmt.Sprintf("%s%d", prefix, i), nil)
	}
	return out
}

func begin(t *testing.T, s queue.Store) queue.Import {
	t.Helper()
	imp, err := s.BeginImport(ctx(t))
	if err != nil {
		t.Fatalf("begin import: %v", err)
	}
	return imp
}

func stage(t *testing.T, imp queue.Import, jobs []*queue.Job) {
	t.Helper()
	if err := imp.Stage(ctx(t), jobs); err != nil {
		t.Fatalf("stage: %v", err)
	}
}

// checkVisible asserts that the readers of s see want jobs, and none
// named hidden (a staged job) when given.
func checkVisible(t *testing.T, s queue.Store, want int, hidden string) {
	t.Helper()
	jobs, err := s.ListJobs(ctx(t), queue.ListParams{})
	if err != nil || len(jobs) != want {
		t.Fatalf("list: %d jobs (%v), want %d", len(jobs), err, want)
	}
	counts, err := s.CountJobs(ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, c := range counts {
		n += c.N
	}
	if n != want {
		t.Fatalf("counts %+v: %d jobs, want %d", counts, n, want)
	}
	if hidden == "" {
		return
	}
	if _, err := s.GetJob(ctx(t), hidden); !errors.Is(err, queue.ErrNotFound) {
		t.Fatalf("get staged %s: want ErrNotFound, got %v", hidden, err)
	}
	if _, err := s.CancelJob(ctx(t), hidden, t0); !errors.Is(err, queue.ErrNotFound) {
		t.Fatalf("cancel staged %s: want ErrNotFound, got %v", hidden, err)
	}
	if _, err := s.DiscardJobs(ctx(t), queue.DiscardParams{IDs: []string{hidden}}); !errors.Is(err, queue.ErrNotFound) {
		t.Fatalf("discard staged %s: want ErrNotFound, got %v", hidden, err)
	}
}

// Staged jobs are invisible to every handle, and claimable by none, until
// Commit makes them all pending at once.
func testImportAllOrNothing(t *testing.T, open Opener) {
	s, other := open(t), open(t)
	insert(t, s, job(t, "before", nil))
	imp := begin(t, s)
	stage(t, imp, chunkOf(t, "a", 300))
	stage(t, imp, chunkOf(t, "b", 200))
	for _, h := range []queue.Store{s, other} {
		checkVisible(t, h, 1, "a7")
	}
	if got := claim(t, other, "w", 1000, storeNow(t, other)); len(got) != 1 || got[0].ID != "before" {
		t.Fatalf("claimed %d jobs while the import was open; want only the one stored before", len(got))
	}
	if err := imp.Commit(ctx(t)); err != nil {
		t.Fatalf("commit: %v", err)
	}
	checkVisible(t, other, 501, "")
	if j := get(t, other, "b199"); j.State != queue.StatePending {
		t.Fatalf("committed job: %+v", j)
	}
	if got := claim(t, other, "w", 1000, storeNow(t, other)); len(got) != 500 {
		t.Fatalf("claimed %d committed jobs, want 500", len(got))
	}
	if err := imp.Abort(ctx(t)); err != nil {
		t.Fatalf("abort after commit: %v", err)
	}
	checkVisible(t, other, 501, "")
}

// Abort leaves nothing, and the ids are free again.
func testImportAbort(t *testing.T, open Opener) {
	s := open(t)
	imp := begin(t, s)
	stage(t, imp, chunkOf(t, "a", 100))
	if err := imp.Abort(ctx(t)); err != nil {
		t.Fatalf("abort: %v", err)
	}
	checkVisible(t, s, 0, "a1")
	again := begin(t, s)
	stage(t, again, chunkOf(t, "a", 100))
	if err := again.Commit(ctx(t)); err != nil {
		t.Fatalf("commit: %v", err)
	}
	checkVisible(t, s, 100, "")
}

// An id taken by a stored job, by a job staged earlier in the same
// import or by one earlier in the chunk fails with ErrDuplicate naming it
// (at that Stage, or, where the chunk is stored in the background, at the
// next Stage or the Commit, wrapping ErrEarlierChunk); aborting then
// leaves the store as it was.
func testImportDuplicate(t *testing.T, open Opener) {
	s := open(t)
	insert(t, s, job(t, "taken", nil))
	tests := []struct {
		name  string
		chunk []*queue.Job
		id    string
	}{
		{"a stored job's id", []*queue.Job{job(t, "fresh", nil), job(t, "taken", nil)}, "taken"},
		{"an id staged before", chunkOf(t, "a", 1), "a0"},
		{"an id twice in the chunk", []*queue.Job{job(t, "twice", nil), job(t, "fresh", nil), job(t, "twice", nil)}, "twice"},
		// A unique key makes the chunk go job by job before Stage returns:
		// its failure is reported there, and still at the Commit after.
		{"a stored job's id in a chunk written job by job", []*queue.Job{
			job(t, "keyed", func(n *queue.NewJob) { n.UniqueKey = "k" }), job(t, "taken", nil)}, "taken"},
		{"an id twice in a chunk written job by job", []*queue.Job{
			job(t, "twice", nil), job(t, "keyed", func(n *queue.NewJob) { n.UniqueKey = "k" }), job(t, "twice", nil)}, "twice"},
		{"an id staged before in a chunk written job by job", []*queue.Job{
			job(t, "keyed", func(n *queue.NewJob) { n.UniqueKey = "k" }), job(t, "a3", nil)}, "a3"},
	}
	// Each case ends at Commit, or at one more Stage first (of jobs, or of
	// none, which only waits for the chunk), where the store reports the
	// chunk's failure then (ErrEarlierChunk with it).
	for _, then := range []string{"commit", "stage", "stage none"} {
		for _, tc := range tests {
			imp := begin(t, s)
			stage(t, imp, chunkOf(t, "a", 10))
			err := imp.Stage(ctx(t), tc.chunk)
			later := err == nil
			switch {
			case later && then == "stage":
				err = imp.Stage(ctx(t), chunkOf(t, "z", 3))
			case later && then == "stage none":
				err = imp.Stage(ctx(t), nil)
			}
			if err == nil && then != "stage none" { // staging none must report it
				err = imp.Commit(ctx(t))
			}
			if !errors.Is(err, queue.ErrDuplicate) || !containsQuoted(err, tc.id) || later != errors.Is(err, queue.ErrEarlierChunk) {
				t.Fatalf("%s, then %s: want ErrDuplicate naming %q (ErrEarlierChunk too if not at its own Stage), got %v",
					tc.name, then, tc.id, err)
			}
			if err := imp.Commit(ctx(t)); err == nil {
				t.Fatalf("%s, then %s: a Commit after the failure committed the import without its chunk", tc.name, then)
			}
			if err := imp.Abort(ctx(t)); err != nil {
				t.Fatalf("%s: abort: %v", tc.name, err)
			}
			checkVisible(t, s, 1, "a1")
		}
	}
}

// Between chunks an open import holds no lock that other writers need:
// another handle (another process, in effect) claims, renews its lease
// and enqueues while the import is open. A store that held its write
// lock until Commit would make these calls fail (SQLite: busy after its
// bounded wait), not merely slow them.
func testImportLetsWorkersWrite(t *testing.T, open Opener) {
	s, worker := open(t), open(t)
	insert(t, s, job(t, "running", nil))
	if err := worker.RegisterWorker(ctx(t), &queue.WorkerInfo{ID: "w", PID: 1, Host: "h", StartedAt: t0, HeartbeatAt: t0}); err != nil {
		t.Fatal(err)
	}
	imp := begin(t, s)
	stage(t, imp, chunkOf(t, "a", 1000))
	now := storeNow(t, worker)
	if got := claim(t, worker, "w", 1, now); len(got) != 1 {
		t.Fatalf("claim during an import: %d jobs", len(got))
	}
	stage(t, imp, chunkOf(t, "b", 1000))
	res, err := worker.Heartbeat(ctx(t), queue.HeartbeatParams{Worker: "w", Jobs: []string{"running"}, Now: now, LeaseUntil: now.Add(time.Minute)})
	if err != nil || len(res.Lost) != 0 {
		t.Fatalf("lease renewal during an import: %+v, %v", res, err)
	}
	insert(t, worker, job(t, "other", nil))
	if err := imp.Commit(ctx(t)); err != nil {
		t.Fatalf("commit: %v", err)
	}
	checkVisible(t, worker, 2002, "")
}

func containsQuoted(err error, id string) bool {
	return err != nil && strings.Contains(err.Error(), strconv.Quote(id))
}
