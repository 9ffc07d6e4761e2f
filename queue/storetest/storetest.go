// Package storetest is the conformance suite every queue.Store must pass on
// a real database: claim order and exclusivity, retry scheduling, the
// dead-letter transition, lease-expiry rescue, heartbeats, cancellation,
// history and output, live output of running attempts, cleanup, config,
// the worker registry, declared queues, recurring-job templates (one job
// per slot, overlap policies) and revoked browser sessions.
//
// A store package runs it with storetest.Run(t, open), where open returns
// a function that opens a new handle on one fresh, empty database per test
// (several handles on the same database stand in for several processes).
package storetest

import (
	"context"
	"testing"
	"time"

	"github.com/queuectl/queuectl/queue"
)

// Opener opens another handle on the test's database.
type Opener func(t *testing.T) queue.Store

// NewDB prepares a fresh database for one test and returns its opener.
type NewDB func(t *testing.T) Opener

// t0 is a fixed, whole-microsecond instant the tests count from.
var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// suiteCase is one named test of the suite.
type suiteCase struct {
	name string
	fn   func(t *testing.T, open Opener)
}

// Run runs the whole suite.
func Run(t *testing.T, newDB NewDB) {
	tests := []suiteCase{
		{"InsertAndGet", testInsertAndGet},
		{"DuplicateIDChangesNothing", testDuplicate},
		{"ClaimOrder", testClaimOrder},
		{"ClaimQueuesAndRunAt", testClaimQueuesAndRunAt},
		{"ClaimExclusiveAcrossHandles", testClaimExclusive},
		{"FinishChecksClaim", testFinishChecksClaim},
		{"FinishAndClaim", testFinishAndClaim},
		{"FinishAndClaimLimited", testFinishAndClaimLimited},
		{"RetrySchedulingAndDeadLetter", testRetryAndDead},
		{"RetryJobs", testRetryJobs},
		{"RetryKeyTaken", testRetryKeyTaken},
		{"LeaseExpiryRescue", testLeaseRescue},
		{"Heartbeat", testHeartbeat},
		{"Cancel", testCancel},
		{"HistoryAndOutput", testHistoryAndOutput},
		{"HistoryThroughRetry", testHistoryThroughRetry},
		{"DeleteFinished", testDelete},
		{"Retention", testRetention},
		{"Config", testConfig},
		{"Workers", testWorkers},
		{"WakeupsAcrossHandles", testWakeups},
		{"ListAndCount", testListAndCount},
		{"CountsFollowChanges", testCountsFollowChanges},
		{"ApplyTemplates", testApplyTemplates},
		{"FireOncePerSlot", testFireOncePerSlot},
		{"FireIDTaken", testFireIDTaken},
		{"Overlap", testOverlap},
		{"Queues", testQueues},
		{"ApplyConcurrently", testApplyConcurrently},
		{"ApplyConfig", testApplyConfig},
		{"ApplyDifferentFilesConcurrently", testApplyDifferentFilesConcurrently},
		{"ControlsConcurrently", testControlsConcurrently},
		{"CancelWinsOverRetry", testCancelWinsOverRetry},
		{"ExpiredLeaseIsNotRenewed", testExpiredLeaseIsNotRenewed},
		{"Discard", testDiscard},
		{"RetryDeadByQueue", testRetryDeadByQueue},
		{"ListSearchAndCursor", testListSearchAndCursor},
		{"LookupsOfUnstorableText", testLookupsOfUnstorableText},
		{"ListStatesOfBothClasses", testListStatesOfBothClasses},
		{"ListDueAfter", testListDueAfter},
		{"ApplyTemplatesReschedules", testApplyTemplatesReschedules},
		{"EnabledAgainDropsWaitingRun", testEnabledAgainDropsWaitingRun},
		{"Metrics", testMetrics},
		{"RunTimes", testRunTimes},
		{"InterruptedAttemptKeepsItsNumber", testInterruptedAttemptKeepsItsNumber},
		{"LiveOutput", testLiveOutput},
		{"ImportAllOrNothing", testImportAllOrNothing},
		{"ImportAbort", testImportAbort},
		{"ImportDuplicate", testImportDuplicate},
		{"ImportLetsWorkersWrite", testImportLetsWorkersWrite},
		{"ImportAfter", testImportAfter},
		{"ImportAfterLater", testImportAfterLater},
		{"ImportUniqueKey", testImportUniqueKey},
		{"AfterAJobNotAdded", testAfterAJobNotAdded},
		{"AfterAStagedJob", testAfterAStagedJob},
		{"ImportDecidesAsInserts", testImportDecidesAsInserts},
		{"ImportCancelledJobHoldsNoKey", testImportCancelledJobHoldsNoKey},
		{"LabelsAndHooks", testLabelsAndHooks},
		{"UniqueKey", testUniqueKey},
		{"UniqueKeyRace", testUniqueKeyRace},
		{"Dependencies", testDependencies},
		{"DependencyCascade", testDependencyCascade},
		{"DependencyRace", testDependencyRace},
		{"UniqueTemplate", testUniqueTemplate},
		{"CoalescedInserts", testCoalescedInserts},
		{"CoalescedFailureIsolated", testCoalescedFailureIsolated},
		{"CoalescedStoreFailure", testCoalescedStoreFailure},
		{"CoalescedAfterAcrossCalls", testCoalescedAfterAcrossCalls},
		{"CoalescedConcurrent", testCoalescedConcurrent},
		{"CoalescedCancelled", testCoalescedCancelled},
	}
	tests = append(tests, controlTests()...)
	tests = append(tests, sessionTests()...)
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tc.fn(t, newDB(t))
		})
	}
}

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return c
}

func ptr[T any](v T) *T { return &v }

// job builds a resolved pending job created at t0+offset.
func job(t *testing.T, id string, mod func(n *queue.NewJob)) *queue.Job {
	t.Helper()
	n := queue.NewJob{ID: id, Command: "true"}
	if mod != nil {
		mod(&n)
	}
	j, err := n.Resolve(queue.DefaultSettings(), t0)
	if err != nil {
		t.Fatalf("resolve %s: %v", id, err)
	}
	return j
}

func insert(t *testing.T, s queue.Store, jobs ...*queue.Job) {
	t.Helper()
	if err := s.InsertJobs(ctx(t), jobs); err != nil {
		t.Fatalf("insert: %v", err)
	}
}

func claim(t *testing.T, s queue.Store, worker string, n int, now time.Time, queues ...string) []*queue.Job {
	t.Helper()
	jobs, err := s.ClaimJobs(ctx(t), queue.ClaimParams{Worker: worker, Queues: queues, Limit: n, Now: now, LeaseUntil: now.Add(30 * time.Second)})
	if err != nil {
		t.Fatalf("claim: %v", err)
	}
	return jobs
}

// storeNow is the time a test's leases count from: the database's clock on
// a store that keeps leases on it (queue.DatabaseClock), else t0.
func storeNow(t *testing.T, s queue.Store) time.Time {
	t.Helper()
	dc, ok := s.(queue.DatabaseClock)
	if !ok {
		return t0
	}
	now, err := dc.DatabaseNow(ctx(t))
	if err != nil {
		t.Fatalf("database clock: %v", err)
	}
	return now
}

// storeTimeAfter returns a time after tm on the store's clock: on a store
// with a clock of its own it waits until that clock has passed tm; on the
// others, whose clock is the caller's, it is tm plus a second.
func storeTimeAfter(t *testing.T, s queue.Store, tm time.Time) time.Time {
	t.Helper()
	if _, ok := s.(queue.DatabaseClock); !ok {
		return tm.Add(time.Second)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		if now := storeNow(t, s); now.After(tm) {
			return now
		}
		if time.Now().After(deadline) {
			t.Fatalf("the database clock did not pass %v", tm)
		}
		time.Sleep(time.Millisecond)
	}
}

// checkLease fails unless a lease of length lease, set by a call given the
// time from, ends where it should: at from+lease on a store that uses the
// caller's times, or lease after the database's time of the call (between
// before, read just before it, and now) on a store with a clock of its own.
func checkLease(t *testing.T, s queue.Store, got, from, before time.Time, lease time.Duration) {
	t.Helper()
	if _, ok := s.(queue.DatabaseClock); !ok {
		if !got.Equal(from.Add(lease)) {
			t.Fatalf("lease until %v, want %v", got, from.Add(lease))
		}
		return
	}
	after := storeNow(t, s)
	if got.Before(before.Add(lease)) || got.After(after.Add(lease)) {
		t.Fatalf("lease until %v, want %s after the database's time of the call (%v to %v)", got, lease, before, after)
	}
}

func ids(jobs []*queue.Job) []string {
	out := make([]string, len(jobs))
	for i, j := range jobs {
		out[i] = j.ID
	}
	return out
}

func get(t *testing.T, s queue.Store, id string) *queue.Job {
	t.Helper()
	j, err := s.GetJob(ctx(t), id)
	if err != nil {
		t.Fatalf("get %s: %v", id, err)
	}
	return j
}

func finish(t *testing.T, s queue.Store, j *queue.Job, worker string, e queue.End, now time.Time) queue.Finish {
	t.Helper()
	f := queue.RetryPolicy{}.Decide(j, worker, e, now)
	applied, err := s.FinishJobs(ctx(t), []queue.Finish{f})
	if err != nil {
		t.Fatalf("finish %s: %v", j.ID, err)
	}
	if !applied[0] {
		t.Fatalf("finish %s: not applied", j.ID)
	}
	return f
}

func failed(now time.Time) queue.End {
	code := 1
	return queue.End{Outcome: queue.OutcomeFailed, ExitCode: &code, Error: "exit status 1", Started: now, Finished: now}
}

func succeeded(now time.Time, output string) queue.End {
	code := 0
	return queue.End{Outcome: queue.OutcomeSucceeded, ExitCode: &code, Started: now, Finished: now.Add(1500 * time.Millisecond), Output: []byte(output)}
}

func equal(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
