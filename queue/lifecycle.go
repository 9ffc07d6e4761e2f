package queue

import (
	"fmt"
	"slices"
	"time"
)

// The job lifecycle. Every rule about how a job moves between states lives
// in this file: which events are allowed in which state, who wins a race,
// the retry / dead-letter decision and the cron overlap decision. Stores
// execute what is decided here (atomically, in their own SQL); the engine,
// the scheduler and the CLI ask here what is allowed. docs/states.md
// describes the same rules for users.
//
//	enqueue --after ─► waiting ──release (all dependencies completed)──► pending
//	                      └──dependency ended dead or cancelled──► cancelled
//	enqueue ─► pending ──claim──► processing ──succeed──► completed
//	            ▲   ▲                │  │ │
//	            │   └──interrupt─────┘  │ └──fail/lose, retries left──► failed ──claim──► processing
//	            │                       └────fail/lose, none left─────► dead
//	            └──────── retry (user) ◄── failed, dead
//	cancel (user): pending, failed ─► cancelled; processing: a request the
//	attempt's end honours (cancelled wins over failed and pending).
//	delete (cleanup): completed, dead, cancelled. discard (user): all but processing.
//
// Races, decided by the store's atomic conditional update:
//   - finish versus rescue: an outcome is recorded only while the job is
//     still processing under the same worker and attempt number (the
//     claim). A rescue of a job whose worker may be alive applies only if
//     the lease had expired (Finish.LeaseExpiredBy); the first to commit
//     wins and the other is not applied.
//   - cancel versus finish: a cancel request on a running job makes the
//     attempt's end record cancelled instead of failed or pending
//     (Finish.IfCancelRequested); completed and dead stand.
//   - heartbeat versus rescue: an expired lease is not renewed; the worker
//     learns the job is lost and stops it (LeaseRenewal).
//   - enqueue --after versus the dependency's end: the enqueue reads the
//     dependencies' states under a lock the dependency's finish also needs
//     (PostgreSQL: FOR SHARE against the finish's row lock; SQLite: the one
//     writer), and the finish settles the waiting dependents it can see in
//     the same transaction, so a dependent is either enqueued knowing the
//     outcome (DecideAfter) or seen by the finish (DecideDependent).
//   - two dependencies ending at once: the finish locks each waiting
//     dependent before it counts the dependencies still unfinished, so the
//     last one to commit releases it.

// Event is something that happens to a job.
type Event string

// The events of the lifecycle.
const (
	EventClaim     Event = "claim"     // a worker takes a runnable job
	EventSucceed   Event = "succeed"   // the attempt exited 0
	EventFail      Event = "fail"      // the attempt failed or timed out
	EventLose      Event = "lose"      // the worker died or lost its lease (rescue)
	EventInterrupt Event = "interrupt" // worker shutdown stopped the attempt; it is not charged
	EventCancel    Event = "cancel"    // a user cancels the job
	EventStop      Event = "stop"      // the attempt ended because a cancel request stopped it
	EventRetry     Event = "retry"     // a user sends a failed or dead job back to pending
	EventDelete    Event = "delete"    // cleanup removes a finished job
	EventDiscard   Event = "discard"   // a user deletes a job its worker does not hold
	EventRelease   Event = "release"   // every job a waiting job runs after completed
)

// Events lists every event.
func Events() []Event {
	return []Event{EventClaim, EventSucceed, EventFail, EventLose, EventInterrupt, EventCancel, EventStop, EventRetry, EventDelete, EventDiscard, EventRelease}
}

// transitions is the lifecycle table: for each state, the events allowed
// in it and the states each may lead to. An event missing here is refused.
// Several targets: the retry decision picks one. No target: the job is
// removed (delete) or only marked (a cancel request on a running job).
var transitions = map[State]map[Event][]State{
	StateWaiting: {
		EventRelease: {StatePending},
		EventCancel:  {StateCancelled}, // by a user, or because a dependency ended dead or cancelled
		EventDiscard: nil,
	},
	StatePending: {
		EventClaim:   {StateProcessing},
		EventCancel:  {StateCancelled},
		EventDiscard: nil,
	},
	StateFailed: {
		EventClaim:   {StateProcessing},
		EventCancel:  {StateCancelled},
		EventRetry:   {StatePending},
		EventDiscard: nil,
	},
	StateProcessing: {
		EventSucceed:   {StateCompleted},
		EventFail:      {StateFailed, StateDead},
		EventLose:      {StateFailed, StateDead},
		EventInterrupt: {StatePending},
		EventCancel:    nil, // a request: the attempt's end decides (EventStop, or cancel wins over a retry)
		EventStop:      {StateCancelled},
	},
	StateDead: {
		EventRetry:   {StatePending},
		EventDelete:  nil,
		EventDiscard: nil,
	},
	StateCompleted: {EventDelete: nil, EventDiscard: nil},
	StateCancelled: {EventDelete: nil, EventDiscard: nil},
}

// Next reports whether ev is allowed for a job in state from and the
// states it may lead to (none: the job is removed, or only marked).
func Next(from State, ev Event) (to []State, ok bool) {
	to, ok = transitions[from][ev]
	return slices.Clone(to), ok
}

// StatesAllowing lists the states in which ev is allowed, in life-cycle order.
func StatesAllowing(ev Event) []State {
	var out []State
	for _, s := range allStates {
		if _, ok := transitions[s][ev]; ok {
			out = append(out, s)
		}
	}
	return out
}

// Runnable reports whether a job in state s waits for a worker (from its
// run_at on).
func (s State) Runnable() bool {
	_, ok := transitions[s][EventClaim]
	return ok
}

// Finished reports whether s is terminal unless a user acts on the job.
func (s State) Finished() bool {
	_, ok := transitions[s][EventDelete]
	return ok
}

// Retryable reports whether a user may send a job in state s back to
// pending: a failed one skips its backoff, a dead one starts over.
func (s State) Retryable() bool {
	_, ok := transitions[s][EventRetry]
	return ok
}

// Discardable reports whether a user may delete a job in state s: any job
// but a running one, which its worker holds.
func (s State) Discardable() bool {
	_, ok := transitions[s][EventDiscard]
	return ok
}

// attemptEvent is the event an attempt's outcome is.
func attemptEvent(o Outcome) Event {
	switch o {
	case OutcomeSucceeded:
		return EventSucceed
	case OutcomeCancelled:
		return EventStop
	case OutcomeInterrupted:
		return EventInterrupt
	case OutcomeLost:
		return EventLose
	}
	return EventFail
}

// Decide turns the end of attempt j.Attempts of j into the Finish that
// records it. This switch is the whole retry / dead-letter decision.
func (p RetryPolicy) Decide(j *Job, worker string, e End, now time.Time) Finish {
	f := Finish{
		JobID: j.ID, Worker: worker, Attempt: j.Attempts, Attempts: j.Attempts, Uncharged: j.Uncharged,
		ExitCode: e.ExitCode, Error: e.Error, Now: now,
		Record: Attempt{
			JobID: j.ID, Number: j.Attempts, StartedAt: e.Started, FinishedAt: e.Finished, ExitCode: e.ExitCode,
			Signal: e.Signal, Outcome: e.Outcome, Worker: worker, Error: e.Error, Output: e.Output, Dropped: e.Dropped,
		},
	}
	charged := j.Attempts - j.Uncharged // this attempt included
	switch ev := attemptEvent(e.Outcome); {
	case ev == EventSucceed:
		f.State = StateCompleted
	case ev == EventStop:
		f.State = StateCancelled
	case ev == EventInterrupt:
		// Shutdown stopped the job: run it again soon, without charging the
		// attempt. Its number stays taken: the next attempt has the next one.
		f.State = StatePending
		f.Uncharged = j.Uncharged + 1
		f.RunAt = now
	case charged <= j.MaxRetries:
		f.State = StateFailed
		f.RunAt = now.Add(p.delay(j, charged))
	default:
		f.State = StateDead
	}
	if f.State.Finished() {
		f.RunAt = j.RunAt
	}
	return f
}

// CancelledByUser is the error recorded on a job a user cancelled.
const CancelledByUser = "cancelled by user"

// IfCancelRequested is the state and error the finish records instead when
// a user asked to cancel the job while the attempt ran: a cancel request
// wins over running again (failed, pending); completed and dead stand.
// Stores choose between the two atomically, by the job's cancel request.
func (f Finish) IfCancelRequested() (State, string) {
	if f.State.Runnable() {
		return StateCancelled, CancelledByUser
	}
	return f.State, f.Error
}

// CancelAction is what a user's cancel does to a job.
type CancelAction int

// Cancel actions.
const (
	CancelNow     CancelAction = iota + 1 // the job is cancelled at once
	CancelRequest                         // the job runs: its worker is asked to stop it
)

// DecideCancel says what cancelling job id in state s does, or refuses it
// with ErrConflict.
func DecideCancel(id string, s State) (CancelAction, error) {
	to, ok := transitions[s][EventCancel]
	switch {
	case !ok:
		return 0, fmt.Errorf("job %q is %s: %w (only waiting, pending, failed or processing jobs can be cancelled)", id, s, ErrConflict)
	case len(to) == 0:
		return CancelRequest, nil
	}
	return CancelNow, nil
}

// RetryAttempts is the attempt count of a job in state s (which must be
// Retryable) once a user retried it: a dead job starts over, a failed one
// keeps its attempts and only skips the rest of its backoff.
func RetryAttempts(s State, attempts int) int {
	if s == StateDead {
		return 0
	}
	return attempts
}

// LeaseRenewal sorts the jobs a heartbeat asked to renew: renewed maps each
// job whose lease was renewed to whether a cancel was requested for it.
// A job not renewed (its lease expired, or it is no longer this worker's)
// is lost and must be stopped; a renewed job with a cancel request is
// reported once.
func LeaseRenewal(jobs []string, renewed map[string]bool) (lost, cancel []string) {
	reported := map[string]bool{}
	for _, id := range jobs {
		c, held := renewed[id]
		switch {
		case !held:
			lost = append(lost, id)
		case c && !reported[id]:
			cancel = append(cancel, id)
			reported[id] = true
		}
	}
	return lost, cancel
}

// activeStates are the states in which a cron run counts as still going
// for its template's overlap policy.
var activeStates = []State{StatePending, StateProcessing, StateFailed}

// ActiveStates returns the states of a run that blocks the next fire of
// its template under overlap = skip or queue.
func ActiveStates() []State { return slices.Clone(activeStates) }

// FireAction is what a cron fire does with its slot.
type FireAction int

// Fire actions.
const (
	FireInsert FireAction = iota + 1 // insert the slot's job
	FireSkip                         // drop the slot
	FireQueue                        // wait for the active run to end, replacing an older waiting slot
)

// DecideUnique refines a fire's action for a template declared unique: a
// fire that would insert is skipped while a job of the template is
// pending (waiting for a worker), so runs never queue up behind each other.
func DecideUnique(a FireAction, pending bool) FireAction {
	if a == FireInsert && pending {
		return FireSkip
	}
	return a
}

// DecideOverlap is the cron overlap decision: what a fire does under the
// template's overlap policy, given whether a run of the template is active.
func DecideOverlap(overlap string, active bool) FireAction {
	switch {
	case !active || overlap == OverlapAllow:
		return FireInsert
	case overlap == OverlapQueue:
		return FireQueue
	}
	return FireSkip
}

// DecideAfter is the state a job enqueued to run after others starts in,
// given their states (a missing id is refused with ErrInvalid): cancelled,
// with the reason, when one of them ended dead or cancelled; pending when
// all completed; waiting otherwise.
func DecideAfter(after []string, states map[string]State) (State, string, error) {
	to := StatePending
	for _, id := range after {
		s, ok := states[id]
		if !ok {
			return "", "", fmt.Errorf("%w: after: no job %q", ErrInvalid, id)
		}
		switch act, reason := DecideDependent(id, s); act {
		case DependentCancel:
			return StateCancelled, reason, nil
		case DependentWait:
			to = StateWaiting
		}
	}
	return to, "", nil
}

// DependentAction is what a dependency's state means for a waiting job.
type DependentAction int

// Dependent actions.
const (
	DependentWait   DependentAction = iota + 1 // the dependency has not ended yet
	DependentReady                             // the dependency completed
	DependentCancel                            // the dependency ended dead or cancelled (or is gone)
)

// DiscardReachesDependents reports whether deleting a job that was in
// state s decides anything for the jobs waiting on it: a completed job has
// released them already; any other state is a dependency that will now
// never complete, so they are cancelled (DecideDependent with no state).
func (s State) DiscardReachesDependents() bool { return s != StateCompleted }

// DecideDependent says what the state s of dependency dep means for a job
// waiting on it, with the reason recorded when the job is cancelled. An
// empty s is a dependency that no longer exists (discarded).
func DecideDependent(dep string, s State) (DependentAction, string) {
	switch s {
	case StateCompleted:
		return DependentReady, ""
	case StateDead:
		return DependentCancel, fmt.Sprintf("dependency %s ended dead", dep)
	case StateCancelled:
		return DependentCancel, fmt.Sprintf("dependency %s was cancelled", dep)
	case "":
		return DependentCancel, fmt.Sprintf("dependency %s was discarded", dep)
	}
	return DependentWait, ""
}
