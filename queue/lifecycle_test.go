package queue_test

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/queuectl/queuectl/queue"
)

// TestLifecycleEveryStateAndEvent checks the lifecycle table over every
// (state, event) pair: "-" refuses the event, "" allows it with no target
// (the job is removed or only marked), otherwise the allowed targets.
func TestLifecycleEveryStateAndEvent(t *testing.T) {
	const (
		W, P, R, C, F, D, X = queue.StateWaiting, queue.StatePending, queue.StateProcessing, queue.StateCompleted, queue.StateFailed, queue.StateDead, queue.StateCancelled
	)
	want := map[queue.State]map[queue.Event]string{
		W: {queue.EventRelease: "pending", queue.EventCancel: "cancelled", queue.EventDiscard: ""},
		P: {queue.EventClaim: "processing", queue.EventCancel: "cancelled", queue.EventDiscard: ""},
		F: {queue.EventClaim: "processing", queue.EventCancel: "cancelled", queue.EventRetry: "pending", queue.EventDiscard: ""},
		R: {
			queue.EventSucceed: "completed", queue.EventFail: "failed,dead", queue.EventLose: "failed,dead",
			queue.EventInterrupt: "pending", queue.EventCancel: "", queue.EventStop: "cancelled",
		},
		D: {queue.EventRetry: "pending", queue.EventDelete: "", queue.EventDiscard: ""},
		C: {queue.EventDelete: "", queue.EventDiscard: ""},
		X: {queue.EventDelete: "", queue.EventDiscard: ""},
	}
	if got := len(queue.States()); got != len(want) {
		t.Fatalf("%d states, the table covers %d", got, len(want))
	}
	for _, s := range queue.States() {
		for _, ev := range queue.Events() {
			t.Run(fmt.Sprintf("%s/%s", s, ev), func(t *testing.T) {
				exp, allowed := want[s][ev]
				to, ok := queue.Next(s, ev)
				if ok != allowed {
					t.Fatalf("allowed = %v, want %v", ok, allowed)
				}
				if !ok {
					return
				}
				var names []string
				for _, st := range to {
					names = append(names, string(st))
				}
				if got := strings.Join(names, ","); got != exp {
					t.Errorf("targets = %q, want %q", got, exp)
				}
			})
		}
	}
}

func TestStatePredicatesFollowTheTable(t *testing.T) {
	for _, s := range queue.States() {
		_, claim := queue.Next(s, queue.EventClaim)
		_, del := queue.Next(s, queue.EventDelete)
		_, retry := queue.Next(s, queue.EventRetry)
		_, discard := queue.Next(s, queue.EventDiscard)
		if s.Runnable() != claim || s.Finished() != del || s.Retryable() != retry || s.Discardable() != discard {
			t.Errorf("%s: Runnable %v Finished %v Retryable %v Discardable %v, table says claim %v delete %v retry %v discard %v",
				s, s.Runnable(), s.Finished(), s.Retryable(), s.Discardable(), claim, del, retry, discard)
		}
	}
	if got := queue.StatesAllowing(queue.EventCancel); !slices.Equal(got, []queue.State{queue.StateWaiting, queue.StatePending, queue.StateProcessing, queue.StateFailed}) {
		t.Errorf("cancellable states = %v", got)
	}
}

// TestDecideFollowsTheTable checks that the retry decision only moves a
// processing job where the table allows for the attempt's outcome.
func TestDecideFollowsTheTable(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	events := map[queue.Outcome]queue.Event{
		queue.OutcomeSucceeded: queue.EventSucceed, queue.OutcomeFailed: queue.EventFail,
		queue.OutcomeTimedOut: queue.EventFail, queue.OutcomeLost: queue.EventLose,
		queue.OutcomeCancelled: queue.EventStop, queue.OutcomeInterrupted: queue.EventInterrupt,
	}
	for o, ev := range events {
		for _, attempts := range []int{1, 4} {
			j := &queue.Job{ID: "j", Attempts: attempts, MaxRetries: 3, BackoffBase: 2, State: queue.StateProcessing}
			f := queue.RetryPolicy{}.Decide(j, "w", queue.End{Outcome: o}, now)
			to, ok := queue.Next(queue.StateProcessing, ev)
			if !ok || !slices.Contains(to, f.State) {
				t.Errorf("outcome %s, attempt %d: state %s, table allows %v", o, attempts, f.State, to)
			}
		}
	}
}

func TestCancelWinsOverRunningAgain(t *testing.T) {
	for _, tc := range []struct {
		state     queue.State
		wantState queue.State
		wantError string
	}{
		{queue.StateFailed, queue.StateCancelled, queue.CancelledByUser},
		{queue.StatePending, queue.StateCancelled, queue.CancelledByUser},
		{queue.StateCompleted, queue.StateCompleted, "e"},
		{queue.StateDead, queue.StateDead, "e"},
		{queue.StateCancelled, queue.StateCancelled, "e"},
	} {
		st, msg := queue.Finish{State: tc.state, Error: "e"}.IfCancelRequested()
		if st != tc.wantState || msg != tc.wantError {
			t.Errorf("%s: (%s, %q), want (%s, %q)", tc.state, st, msg, tc.wantState, tc.wantError)
		}
	}
}

func TestDecideCancel(t *testing.T) {
	for _, s := range queue.States() {
		action, err := queue.DecideCancel("j", s)
		switch s {
		case queue.StateWaiting, queue.StatePending, queue.StateFailed:
			if action != queue.CancelNow || err != nil {
				t.Errorf("cancel %s: %v, %v", s, action, err)
			}
		case queue.StateProcessing:
			if action != queue.CancelRequest || err != nil {
				t.Errorf("cancel %s: %v, %v", s, action, err)
			}
		default:
			if !errors.Is(err, queue.ErrConflict) {
				t.Errorf("cancel %s: err %v, want ErrConflict", s, err)
			}
		}
	}
	if queue.RetryAttempts(queue.StateDead, 3) != 0 || queue.RetryAttempts(queue.StateFailed, 3) != 3 {
		t.Error("retry attempts: a dead job starts over, a failed one keeps its attempts")
	}
}

func TestDecideOverlap(t *testing.T) {
	for _, tc := range []struct {
		overlap string
		active  bool
		want    queue.FireAction
	}{
		{queue.OverlapSkip, false, queue.FireInsert},
		{queue.OverlapSkip, true, queue.FireSkip},
		{queue.OverlapQueue, false, queue.FireInsert},
		{queue.OverlapQueue, true, queue.FireQueue},
		{queue.OverlapAllow, false, queue.FireInsert},
		{queue.OverlapAllow, true, queue.FireInsert},
		{"", true, queue.FireSkip},
	} {
		if got := queue.DecideOverlap(tc.overlap, tc.active); got != tc.want {
			t.Errorf("overlap %q, active %v: %v, want %v", tc.overlap, tc.active, got, tc.want)
		}
	}
	if got := queue.ActiveStates(); !slices.Equal(got, []queue.State{queue.StatePending, queue.StateProcessing, queue.StateFailed}) {
		t.Errorf("active states = %v", got)
	}
}

func TestLeaseRenewal(t *testing.T) {
	lost, cancel := queue.LeaseRenewal([]string{"a", "b", "c", "c", "d"}, map[string]bool{"a": false, "c": true, "d": true})
	if !slices.Equal(lost, []string{"b"}) || !slices.Equal(cancel, []string{"c", "d"}) {
		t.Errorf("lost %v cancel %v, want [b] [c d]", lost, cancel)
	}
}

// TestDecideAfter checks the state a job enqueued after others starts in.
func TestDecideAfter(t *testing.T) {
	states := map[string]queue.State{
		"done": queue.StateCompleted, "run": queue.StateProcessing, "retry": queue.StateFailed,
		"dead": queue.StateDead, "gone": queue.StateCancelled, "wait": queue.StateWaiting,
	}
	for _, tc := range []struct {
		after  []string
		want   queue.State
		reason string
	}{
		{[]string{"done"}, queue.StatePending, ""},
		{[]string{"done", "run"}, queue.StateWaiting, ""},
		{[]string{"retry", "wait"}, queue.StateWaiting, ""},
		{[]string{"run", "dead"}, queue.StateCancelled, "dependency dead ended dead"},
		{[]string{"done", "gone"}, queue.StateCancelled, "dependency gone was cancelled"},
	} {
		got, reason, err := queue.DecideAfter(tc.after, states)
		if err != nil || got != tc.want || reason != tc.reason {
			t.Errorf("after %v: %s %q %v, want %s %q", tc.after, got, reason, err, tc.want, tc.reason)
		}
		if _, ok := queue.Next(queue.StateWaiting, queue.EventRelease); !ok {
			t.Fatal("release must be allowed from waiting")
		}
	}
	if _, _, err := queue.DecideAfter([]string{"done", "nope"}, states); !errors.Is(err, queue.ErrInvalid) || !strings.Contains(err.Error(), `"nope"`) {
		t.Errorf("unknown dependency: %v", err)
	}
	if act, reason := queue.DecideDependent("x", ""); act != queue.DependentCancel || reason != "dependency x was discarded" {
		t.Errorf("discarded dependency: %v %q", act, reason)
	}
	for _, s := range queue.States() {
		if got, want := s.DiscardReachesDependents(), s != queue.StateCompleted; got != want {
			t.Errorf("discarding a %s job reaches its dependents: %v, want %v", s, got, want)
		}
	}
}
