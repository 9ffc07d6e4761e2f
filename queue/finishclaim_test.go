package queue_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/queuectl/queuectl/queue"
	"github.com/queuectl/queuectl/queue/sqlite"
)

// mergingStore counts the engine's writes on a store that is a
// queue.FinishClaimer, and can fail the first calls that carry both
// outcomes and a claim.
type mergingStore struct {
	*sqlite.Store
	mu         sync.Mutex
	withClaim  int             // outcomes in FinishAndClaim calls with a claim that reached the store
	alone      int             // outcomes in FinishJobs calls
	failMerged int             // how many more calls with outcomes and a claim fail before reaching it
	failedAt   time.Time       // when the last injected failure was returned
	claimGaps  []time.Duration // from each injected failure to the next claim that reached the store
}

// claimed notes a claim reaching the store; the caller holds m.mu.
func (m *mergingStore) claimed() {
	if !m.failedAt.IsZero() {
		m.claimGaps = append(m.claimGaps, time.Since(m.failedAt))
		m.failedAt = time.Time{}
	}
}

func (m *mergingStore) ClaimJobs(ctx context.Context, p queue.ClaimParams) ([]*queue.Job, error) {
	m.mu.Lock()
	m.claimed()
	m.mu.Unlock()
	return m.Store.ClaimJobs(ctx, p)
}

func (m *mergingStore) FinishAndClaim(ctx context.Context, fs []queue.Finish, cs []queue.ClaimParams) ([]bool, [][]*queue.Job, error) {
	m.mu.Lock()
	if len(fs) > 0 && len(cs) > 0 {
		if m.failMerged > 0 {
			m.failMerged--
			m.failedAt = time.Now()
			m.mu.Unlock()
			return nil, nil, errors.New("injected: database is locked")
		}
		m.withClaim += len(fs)
	}
	if len(cs) > 0 {
		m.claimed()
	}
	m.mu.Unlock()
	return m.Store.FinishAndClaim(ctx, fs, cs)
}

func (m *mergingStore) FinishJobs(ctx context.Context, fs []queue.Finish) ([]bool, error) {
	m.mu.Lock()
	m.alone += len(fs)
	m.mu.Unlock()
	return m.Store.FinishJobs(ctx, fs)
}

// counts returns how many outcomes were written with a claim and alone.
func (m *mergingStore) counts() (withClaim, alone int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.withClaim, m.alone
}

// runAll enqueues n jobs on st, runs them on a one-slot engine that does
// nothing, and waits until every one has completed in one attempt.
func runAll(t *testing.T, st queue.Store, n int) {
	t.Helper()
	runAllFor(t, st, n, 1, 0)
}

// runAllFor is runAll on an engine of slots slots whose jobs each take d.
func runAllFor(t *testing.T, st queue.Store, n, slots int, d time.Duration) {
	t.Helper()
	now := time.Now().UTC()
	for i := range n {
		enqueue(t, st, queue.NewJob{ID: fmt.Sprintf("j%02d", i)}, now)
	}
	run := queue.RunnerFunc(func(ctx context.Context, spec queue.RunSpec) queue.RunResult {
		start := time.Now().UTC()
		time.Sleep(d) // the job's own run time, which the test is about (none for runAll)
		return queue.RunResult{ExitCode: 0, Started: start, Finished: time.Now().UTC()}
	})
	startEngine(t, st, run, queue.EngineConfig{Lanes: []queue.Lane{{Slots: slots}}, Poll: time.Second})
	waitFor(t, "every job to complete", func() bool {
		jobs, err := st.ListJobs(testCtx(t), queue.ListParams{States: []queue.State{queue.StateCompleted}, Limit: n})
		return err == nil && len(jobs) == n
	})
	for i := range n {
		if j := getJob(t, st, fmt.Sprintf("j%02d", i)); j.Attempts != 1 {
			t.Fatalf("%s completed in %d attempts, want 1", j.ID, j.Attempts)
		}
	}
}

// A one-slot worker's slot frees as its job's outcome is sent, and the
// claim that refills it joins that outcome's transaction: most jobs are
// claimed in the transaction that records the one before.
func TestEngineClaimsInItsOutcomesTransaction(t *testing.T) {
	st, _ := openStore(t)
	m := &mergingStore{Store: st}
	const n = 40
	runAll(t, m, n)
	if withClaim, alone := m.counts(); withClaim < n/2 {
		t.Fatalf("%d of %d outcomes were written with a claim (%d on their own), want at least half", withClaim, n, alone)
	}
}

// On a lane of two slots whose jobs take longer than its claims, the
// slots free one at a time and the lane refills each at once, with the
// other still busy: that claim is due too, and joins the freeing job's
// outcome, so most outcomes are written with a claim rather than alone.
func TestEngineClaimsInItsOutcomesTransactionWithBusySlots(t *testing.T) {
	st, _ := openStore(t)
	m := &mergingStore{Store: st}
	const n = 40
	runAllFor(t, m, n, 2, 5*time.Millisecond)
	if withClaim, alone := m.counts(); withClaim < 3*n/4 {
		t.Fatalf("%d of %d outcomes were written with a claim (%d on their own), want at least three quarters", withClaim, n, alone)
	}
}

// When a write carrying outcomes and a claim fails, the claim reports the
// error (its lane tries again) and the outcomes are written on their own:
// none is lost, and no job runs twice. The lane backs off before it
// claims again (100 ms after a first failure), though the slot that freed
// before the failed claim left a wake-up behind: retrying at once would
// hammer a failing store, and here it also found the finisher still
// writing those outcomes, so that its claim went alone, the next outcome
// went alone, and no outcome was written with a claim again.
func TestEngineOutcomesOutliveAFailedMergedWrite(t *testing.T) {
	st, _ := openStore(t)
	m := &mergingStore{Store: st, failMerged: 3}
	runAll(t, m, 10)
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.failMerged != 0 {
		t.Fatalf("%d of the 3 injected failures never happened: no joint write was tried", m.failMerged)
	}
	if m.alone == 0 {
		t.Fatal("no outcome was written on its own after the merged writes failed")
	}
	if len(m.claimGaps) != 3 {
		t.Fatalf("%d claims followed the 3 injected failures, want 3", len(m.claimGaps))
	}
	for i, gap := range m.claimGaps {
		if gap < 100*time.Millisecond {
			t.Errorf("claim %d after a failure came %v after it, want the 100ms back-off", i+1, gap)
		}
	}
}
