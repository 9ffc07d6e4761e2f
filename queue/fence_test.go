package queue_test

import (
	"context"
	"errors"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/queuectl/queuectl/internal/proc"
	"github.com/queuectl/queuectl/queue"
)

// partitioned is a store this worker loses touch with once cut is set:
// heartbeats and outcomes fail, as on the far side of a network partition.
// It records the jobs whose outcomes the engine tried to write meanwhile.
// Once busy is set instead, heartbeats reach the store but report every
// job busy (its row held by another transaction), so no lease is renewed.
type partitioned struct {
	queue.Store
	cut, busy  atomic.Bool
	mu         sync.Mutex
	finishedIn []string // jobs the engine tried to finish while cut or busy
}

var errUnreachable = errors.New("dial tcp: connect: network is unreachable")

func (s *partitioned) Heartbeat(ctx context.Context, p queue.HeartbeatParams) (queue.HeartbeatResult, error) {
	if s.cut.Load() {
		return queue.HeartbeatResult{}, errUnreachable
	}
	if s.busy.Load() {
		jobs := p.Jobs
		p.Jobs = nil
		res, err := s.Store.Heartbeat(ctx, p)
		res.Busy = jobs
		return res, err
	}
	return s.Store.Heartbeat(ctx, p)
}

func (s *partitioned) FinishJobs(ctx context.Context, fs []queue.Finish) ([]bool, error) {
	if s.cut.Load() || s.busy.Load() {
		s.mu.Lock()
		for _, f := range fs {
			s.finishedIn = append(s.finishedIn, f.JobID)
		}
		s.mu.Unlock()
	}
	if s.cut.Load() {
		return nil, errUnreachable
	}
	return s.Store.FinishJobs(ctx, fs)
}

// A worker that cannot renew a job's lease stops the job before the lease
// ends, on its own clock, and gives it up without recording an outcome:
// after the lease another worker may run it, and the two must not overlap.
func TestEngineStopsJobWhoseLeaseItCannotRenew(t *testing.T) {
	t.Run("partition", func(t *testing.T) { checkFenced(t, func(st *partitioned) { st.cut.Store(true) }) })
	// A job reported busy at every heartbeat is not renewed either: the
	// engine must not move its fence as if it were.
	t.Run("row always busy", func(t *testing.T) { checkFenced(t, func(st *partitioned) { st.busy.Store(true) }) })
}

func checkFenced(t *testing.T, breakRenewals func(*partitioned)) {
	base, _ := openStore(t)
	st := &partitioned{Store: base}
	b := newBlocker()
	enqueue(t, st, queue.NewJob{ID: "fenced"}, time.Now())
	const lease = 1500 * time.Millisecond
	eng := queue.NewEngine(st, b.runner(), queue.EngineConfig{Lease: lease, CancelPoll: 50 * time.Millisecond})
	if err := eng.Start(testCtx(t)); err != nil {
		t.Fatal(err)
	}
	r := recv(t, b.started, "the job to start")

	// Healthy renewals keep it running past a whole lease.
	select {
	case <-r.ctx.Done():
		t.Fatal("a job whose lease is renewed was stopped")
	case <-time.After(lease + lease/2):
	}

	breakRenewals(st)
	cut := time.Now()
	recv(t, r.ctx.Done(), "the job to be stopped")
	if took := time.Since(cut); took >= lease {
		t.Errorf("stopped %s after the partition, want before the lease of %s ends", took, lease)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	eng.Stop(ctx) // waits for the job's goroutine
	st.mu.Lock()
	defer st.mu.Unlock()
	if slices.Contains(st.finishedIn, "fenced") {
		t.Errorf("the engine tried to record an outcome for a job it gave up")
	}
	if j := getJob(t, base, "fenced"); j.State != queue.StateProcessing {
		t.Errorf("state %s, want processing (left to the rescuer after its lease)", j.State)
	}
}

// killRecorder is this host's process table, but records when the engine
// kills an attempt's leftovers (KillByEnv) instead of killing anything.
type killRecorder struct {
	proc.Host
	killed chan []string
}

func (k killRecorder) KillByEnv(entries ...string) (int, error) {
	select {
	case k.killed <- entries:
	default:
	}
	return 0, nil
}

// What left a fenced job's process group (setsid) is killed when the
// group's SIGKILL is due, before the lease ends, not once the runner
// returns: the executor waits up to its WaitDelay (2 s) for such a process
// to let go of the output pipe, longer than a short lease's last quarter,
// and after the lease another worker may start the job.
func TestEngineKillsFencedLeftoversBeforeTheLeaseEnds(t *testing.T) {
	base, _ := openStore(t)
	st := &partitioned{Store: base}
	enqueue(t, st, queue.NewJob{ID: "fenced"}, time.Now())
	const lease = 1500 * time.Millisecond
	started, release := make(chan struct{}), make(chan struct{})
	runner := queue.RunnerFunc(func(ctx context.Context, _ queue.RunSpec) queue.RunResult {
		close(started)
		<-ctx.Done()
		<-release // a leftover holds the output pipe
		return queue.RunResult{ExitCode: -1, Canceled: true}
	})
	procs := killRecorder{killed: make(chan []string, 1)}
	eng := queue.NewEngine(st, runner, queue.EngineConfig{Lease: lease, CancelPoll: 50 * time.Millisecond, Processes: procs})
	if err := eng.Start(testCtx(t)); err != nil {
		t.Fatal(err)
	}
	defer func() {
		close(release)
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		eng.Stop(ctx)
	}()
	recv(t, started, "the job to start")

	st.cut.Store(true)
	cut := time.Now()
	entries := recv(t, procs.killed, "the fenced attempt's leftovers to be killed")
	if took := time.Since(cut); took >= lease {
		t.Errorf("leftovers killed %s after the partition, want before the lease of %s ends", took, lease)
	}
	if !slices.Contains(entries, "QUEUECTL_JOB_ID=fenced") {
		t.Errorf("killed processes by %q, want the fenced job's", entries)
	}
}

// hungOnce is a store whose first heartbeat after hang is set never
// answers (a connection whose packets a firewall silently drops) until its
// context ends; the heartbeats after it reach the store through other
// connections.
type hungOnce struct {
	queue.Store
	hang atomic.Bool
}

func (s *hungOnce) Heartbeat(ctx context.Context, p queue.HeartbeatParams) (queue.HeartbeatResult, error) {
	if s.hang.CompareAndSwap(true, false) {
		<-ctx.Done()
		return queue.HeartbeatResult{}, ctx.Err()
	}
	return s.Store.Heartbeat(ctx, p)
}

// One heartbeat that never answers does not stop the renewals: it is given
// up in time for the next ones to renew the lease before the fence, and
// the job keeps running past a whole lease.
func TestEngineHungHeartbeatDoesNotFenceAHealthyJob(t *testing.T) {
	base, _ := openStore(t)
	st := &hungOnce{Store: base}
	b := newBlocker()
	enqueue(t, st, queue.NewJob{ID: "healthy"}, time.Now())
	const lease = 2 * time.Second
	eng := queue.NewEngine(st, b.runner(), queue.EngineConfig{Lease: lease, CancelPoll: 50 * time.Millisecond})
	if err := eng.Start(testCtx(t)); err != nil {
		t.Fatal(err)
	}
	defer func() {
		b.releaseAll()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		eng.Stop(ctx)
	}()
	r := recv(t, b.started, "the job to start")
	st.hang.Store(true)
	select {
	case <-r.ctx.Done():
		t.Fatal("one hung heartbeat stopped a job whose lease the next ones could renew")
	case <-time.After(2 * lease):
	}
}

// listHungOnce is a store whose first worker listing after hang is set
// never answers until its context ends, as on a connection whose packets
// are dropped.
type listHungOnce struct {
	queue.Store
	hang atomic.Bool
}

func (s *listHungOnce) ListWorkers(ctx context.Context) ([]*queue.WorkerInfo, error) {
	if s.hang.CompareAndSwap(true, false) {
		<-ctx.Done()
		return nil, ctx.Err()
	}
	return s.Store.ListWorkers(ctx)
}

// A rescue pass that gets no answer is given up, and the passes after it
// rescue the jobs whose leases expired.
func TestEngineHungRescuePassDoesNotStopRescues(t *testing.T) {
	base, _ := openStore(t)
	st := &listHungOnce{Store: base}
	st.hang.Store(true)
	enqueue(t, st, queue.NewJob{ID: "orphan"}, time.Now())
	now := time.Now()
	if got, err := base.ClaimJobs(testCtx(t), queue.ClaimParams{Worker: "elsewhere", Limit: 1, Now: now, LeaseUntil: now.Add(time.Second)}); err != nil || len(got) != 1 {
		t.Fatalf("claim by another worker: %v %v", got, err)
	}
	b := newBlocker()
	defer b.releaseAll()
	eng := queue.NewEngine(st, b.runner(), queue.EngineConfig{Lease: time.Second, Rescue: 50 * time.Millisecond, Lanes: []queue.Lane{{Queues: []string{"none"}, Slots: 1}}})
	if err := eng.Start(testCtx(t)); err != nil {
		t.Fatal(err)
	}
	defer func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		eng.Stop(ctx)
	}()
	waitFor(t, "the orphaned job to be rescued", func() bool { return getJob(t, base, "orphan").State != queue.StateProcessing })
}
