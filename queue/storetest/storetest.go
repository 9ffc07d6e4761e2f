// Package storetest is the conformance suite every queue.Store must pass on
// a real database: claim order and exclusivity, retry scheduling, the
// dead-letter transition, lease-expiry rescue, heartbeats, cancellation,
// history and output, live output of running attempts, cleanup, config,
// the worker registry, declared queues and recurring-job templates (one job
// per slot, overlap policies).
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

// Run runs the whole suite.
func Run(t *testing.T, newDB NewDB) {
	tests := []struct {
		name string
		fn   func(t *testing.T, open Opener)
	}{
		{"InsertAndGet", testInsertAndGet},
		{"DuplicateIDChangesNothing", testDuplicate},
		{"ClaimOrder", testClaimOrder},
		{"ClaimQueuesAndRunAt", testClaimQueuesAndRunAt},
		{"ClaimExclusiveAcrossHandles", testClaimExclusive},
		{"FinishChecksClaim", testFinishChecksClaim},
		{"RetrySchedulingAndDeadLetter", testRetryAndDead},
		{"RetryJobs", testRetryJobs},
		{"LeaseExpiryRescue", testLeaseRescue},
		{"Heartbeat", testHeartbeat},
		{"Cancel", testCancel},
		{"HistoryAndOutput", testHistoryAndOutput},
		{"DeleteFinished", testDelete},
		{"Retention", testRetention},
		{"Config", testConfig},
		{"Workers", testWorkers},
		{"WakeupsAcrossHandles", testWakeups},
		{"ListAndCount", testListAndCount},
		{"ApplyTemplates", testApplyTemplates},
		{"FireOncePerSlot", testFireOncePerSlot},
		{"Overlap", testOverlap},
		{"Queues", testQueues},
		{"CancelWinsOverRetry", testCancelWinsOverRetry},
		{"ExpiredLeaseIsNotRenewed", testExpiredLeaseIsNotRenewed},
		{"Discard", testDiscard},
		{"RetryDeadByQueue", testRetryDeadByQueue},
		{"ListSearchAndCursor", testListSearchAndCursor},
		{"Metrics", testMetrics},
		{"LiveOutput", testLiveOutput},
	}
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
