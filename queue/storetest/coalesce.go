package storetest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/queuectl/queuectl/queue"
)

// gatedStore holds the first InsertJobs call that reaches it until gate
// closes, and records how many jobs each call carried.
type gatedStore struct {
	queue.Store
	entered chan struct{} // closed when the first call arrives
	gate    chan struct{}
	once    sync.Once
	mu      sync.Mutex
	calls   []int
	fail    error // returned, storing nothing, by calls of more than one job
}

func newGatedStore(s queue.Store) *gatedStore {
	return &gatedStore{Store: s, entered: make(chan struct{}), gate: make(chan struct{})}
}

func (g *gatedStore) InsertJobs(ctx context.Context, jobs []*queue.Job) error {
	g.mu.Lock()
	g.calls = append(g.calls, len(jobs))
	g.mu.Unlock()
	g.once.Do(func() {
		close(g.entered)
		<-g.gate
	})
	if g.fail != nil && len(jobs) > 1 {
		return g.fail
	}
	return g.Store.InsertJobs(ctx, jobs)
}

func (g *gatedStore) callSizes() []int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return append([]int(nil), g.calls...)
}

// holdFirst starts a call storing the job "first" on c and returns once
// g holds it, so that the calls started next wait for a group; release
// lets it through and checks that it was stored.
func holdFirst(t *testing.T, c *queue.Coalescing, g *gatedStore) (release func()) {
	first := make(chan error, 1)
	go func() { first <- c.InsertJobs(ctx(t), []*queue.Job{job(t, "first", nil)}) }()
	<-g.entered
	return func() {
		t.Helper()
		close(g.gate)
		if err := <-first; err != nil {
			t.Fatalf("first call: %v", err)
		}
	}
}

// startInserts starts one InsertJobs call per job set on c, each waiting in
// c before the next starts, and returns their errors once all returned.
func startInserts(t *testing.T, c *queue.Coalescing, sets ...[]*queue.Job) func() []error {
	t.Helper()
	errs := make([]error, len(sets))
	var wg sync.WaitGroup
	for i, jobs := range sets {
		before := c.Waiting()
		wg.Go(func() { errs[i] = c.InsertJobs(ctx(t), jobs) })
		waitUntil(t, fmt.Sprintf("call %d to wait", i+1), func() bool { return c.Waiting() == before+1 })
	}
	return func() []error { wg.Wait(); return errs }
}

func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

// testCoalescedInserts: calls that arrive while another's jobs are being
// stored are stored together in one call of the store's, in the order
// they arrived, and each returns once its jobs are stored.
func testCoalescedInserts(t *testing.T, open Opener) {
	g := newGatedStore(open(t))
	c := queue.CoalesceInserts(g)
	release := holdFirst(t, c, g)
	key := func(n *queue.NewJob) { n.UniqueKey = "nightly" }
	d := job(t, "d", key)
	wait := startInserts(t, c,
		[]*queue.Job{job(t, "a", nil)},
		[]*queue.Job{job(t, "b", key), job(t, "c", nil)},
		[]*queue.Job{d},
		[]*queue.Job{job(t, "e", func(n *queue.NewJob) { n.After = []string{"c"} })},
	)
	release()
	for i, err := range wait() {
		if err != nil {
			t.Fatalf("call %d: %v", i+1, err)
		}
	}
	if got := g.callSizes(); !slices.Equal(got, []int{1, 5}) {
		t.Fatalf("store calls carried %v jobs, want [1 5]: the four waiting calls in one", got)
	}
	for _, id := range []string{"first", "a", "b", "c", "e"} {
		get(t, c, id)
	}
	if _, err := c.GetJob(ctx(t), "d"); !errors.Is(err, queue.ErrNotFound) {
		t.Fatalf("d shares b's unique key and came after it, so it must not be stored: %v", err)
	}
	if d.ExistingID != "b" {
		t.Fatalf("d's call must name the job holding its key, b; got %q", d.ExistingID)
	}
	if e := get(t, c, "e"); e.State != queue.StateWaiting {
		t.Fatalf("e depends on c, stored before it in the same group: state %s, want waiting", e.State)
	}
}

// testCoalescedFailureIsolated: when a group fails, each of its calls is
// retried alone, so only the call with the bad job fails, and the calls
// still resolve in order (a later call reusing an earlier one's id fails).
func testCoalescedFailureIsolated(t *testing.T, open Opener) {
	s := open(t)
	insert(t, s, job(t, "taken", nil))
	g := newGatedStore(s)
	c := queue.CoalesceInserts(g)
	release := holdFirst(t, c, g)
	again := job(t, "fresh", nil)
	again.Command = "echo second"
	wait := startInserts(t, c,
		[]*queue.Job{job(t, "ok1", nil)},
		[]*queue.Job{job(t, "ok2", nil), job(t, "taken", nil)},
		[]*queue.Job{job(t, "fresh", nil)},
		[]*queue.Job{again},
	)
	release()
	errs := wait()
	if errs[0] != nil || errs[2] != nil {
		t.Fatalf("calls with good jobs failed: %v", errs)
	}
	for _, i := range []int{1, 3} {
		if !errors.Is(errs[i], queue.ErrDuplicate) {
			t.Fatalf("call %d: want ErrDuplicate, got %v", i+1, errs[i])
		}
	}
	if _, err := c.GetJob(ctx(t), "ok2"); !errors.Is(err, queue.ErrNotFound) {
		t.Fatalf("a failed call must store none of its jobs; ok2: %v", err)
	}
	if got := get(t, c, "fresh"); got.Command != "true" {
		t.Fatalf("fresh holds %q: the later call with its id overwrote it", got.Command)
	}
	get(t, c, "ok1")
	if got := g.callSizes(); len(got) != 2+4 || got[1] != 5 {
		t.Fatalf("store calls carried %v jobs, want [1 5] then each of the four alone", got)
	}
}

// testCoalescedAfterAcrossCalls: a call whose job runs after a job of
// another call that was not added (its key held) fails as it would
// after that call alone, rather than running after the holder; the group
// is stored call by call.
func testCoalescedAfterAcrossCalls(t *testing.T, open Opener) {
	s := open(t)
	insert(t, s, job(t, "held", keyed("k")))
	g := newGatedStore(s)
	c := queue.CoalesceInserts(g)
	release := holdFirst(t, c, g)
	dup := job(t, "dup", keyed("k"))
	wait := startInserts(t, c,
		[]*queue.Job{dup},
		[]*queue.Job{job(t, "next", func(n *queue.NewJob) { n.After = []string{"dup"} })},
	)
	release()
	errs := wait()
	if errs[0] != nil || dup.ExistingID != "held" {
		t.Fatalf("the keyed call: %v, ExistingID %q", errs[0], dup.ExistingID)
	}
	if !errors.Is(errs[1], queue.ErrInvalid) {
		t.Fatalf("a job after another call's job not added: want ErrInvalid as alone, got %v", errs[1])
	}
	if got := g.callSizes(); len(got) != 1+2 || got[1] != 1 || got[2] != 1 {
		t.Fatalf("store calls carried %v jobs, want [1] then each call alone", got)
	}
}

// testCoalescedStoreFailure: a group that fails for a reason no job
// caused (the database) fails every call in it, without storing each
// again alone.
func testCoalescedStoreFailure(t *testing.T, open Opener) {
	g := newGatedStore(open(t))
	g.fail = errors.New("disk I/O error")
	c := queue.CoalesceInserts(g)
	release := holdFirst(t, c, g)
	wait := startInserts(t, c, []*queue.Job{job(t, "a", nil)}, []*queue.Job{job(t, "b", nil)})
	release()
	for i, err := range wait() {
		if !errors.Is(err, g.fail) {
			t.Fatalf("call %d: want the group's error, got %v", i+1, err)
		}
	}
	if got := g.callSizes(); !slices.Equal(got, []int{1, 2}) {
		t.Fatalf("store calls carried %v jobs, want [1 2]: no call stored again alone", got)
	}
}

// testCoalescedConcurrent: many goroutines enqueueing at once through one
// coalescer all get their jobs stored, once each.
func testCoalescedConcurrent(t *testing.T, open Opener) {
	const goroutines, each = 16, 25
	g := newGatedStore(open(t))
	close(g.gate)
	c := queue.CoalesceInserts(g)
	var wg sync.WaitGroup
	errs := make(chan error, goroutines*each)
	for w := range goroutines {
		wg.Go(func() {
			for i := range each {
				errs <- c.InsertJobs(ctx(t), []*queue.Job{job(t, fmt.Sprintf("w%d-%d", w, i), nil)})
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	checkVisible(t, c, goroutines*each, "")
	stored := 0
	for _, size := range g.callSizes() {
		stored += size
	}
	if stored != goroutines*each {
		t.Fatalf("the store was asked for %d jobs, want %d: a group's jobs were sent twice or lost", stored, goroutines*each)
	}
}

// testCoalescedCancelled: a call whose context ends while it waits for
// its group leaves with the context's error and stores nothing, and the
// calls around it are stored; a call already cancelled stores nothing.
func testCoalescedCancelled(t *testing.T, open Opener) {
	g := newGatedStore(open(t))
	c := queue.CoalesceInserts(g)
	release := holdFirst(t, c, g)
	before := startInserts(t, c, []*queue.Job{job(t, "before", nil)})
	cctx, cancel := context.WithCancel(ctx(t))
	gone := make(chan error, 1)
	go func() { gone <- c.InsertJobs(cctx, []*queue.Job{job(t, "gone", nil)}) }()
	waitUntil(t, "the call to wait", func() bool { return c.Waiting() == 2 })
	after := startInserts(t, c, []*queue.Job{job(t, "after", nil)})
	cancel()
	select {
	case err := <-gone:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("a call cancelled while waiting: want context.Canceled, got %v", err)
		}
	case <-time.After(10 * time.Second):
		close(g.gate)
		t.Fatal("a call cancelled while waiting for its group kept waiting")
	}
	release()
	for _, wait := range []func() []error{before, after} {
		if errs := wait(); errs[0] != nil {
			t.Fatal(errs[0])
		}
	}
	for _, id := range []string{"first", "before", "after"} {
		get(t, c, id)
	}
	if _, err := c.GetJob(ctx(t), "gone"); !errors.Is(err, queue.ErrNotFound) {
		t.Fatalf("gone: %v", err)
	}
	if got := g.callSizes(); !slices.Equal(got, []int{1, 2}) {
		t.Fatalf("store calls carried %v jobs, want [1 2]", got)
	}
	dead, stop := context.WithCancel(ctx(t))
	stop()
	if err := c.InsertJobs(dead, []*queue.Job{job(t, "late", nil)}); !errors.Is(err, context.Canceled) {
		t.Fatalf("an already cancelled call: want context.Canceled, got %v", err)
	}
	if _, err := c.GetJob(ctx(t), "late"); !errors.Is(err, queue.ErrNotFound) {
		t.Fatalf("late: %v", err)
	}
}
