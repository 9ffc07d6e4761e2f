package queue

import (
	"context"
	"slices"
	"testing"
	"time"
)

// TestRunningSetLeavesEndedAttempts checks that a heartbeat's answer stops
// only attempts whose command still runs. An attempt whose command ended
// stays in the running set until its outcome is recorded; a heartbeat
// sent meanwhile finds its lease gone (taken by that very outcome), and
// must neither report it lost nor mark it: the recording settles it.
func TestRunningSetLeavesEndedAttempts(t *testing.T) {
	s := newRunningSet()
	add := func(id string) (*runningJob, context.Context) {
		ctx, cancel := context.WithCancelCause(context.Background())
		t.Cleanup(func() { cancel(nil) })
		r := &runningJob{job: &Job{ID: id}, cancel: cancel}
		s.add(r)
		return r, ctx
	}
	running, runningCtx := add("running")
	ended, endedCtx := add("ended")
	ended.end()

	var found []string
	s.stop([]string{"running", "ended", "unknown"}, OutcomeLost, func(id string) { found = append(found, id) })
	if !slices.Equal(found, []string{"running"}) {
		t.Fatalf("stopped as lost: %q, want only the attempt still running", found)
	}
	if runningCtx.Err() == nil || running.why() != OutcomeLost {
		t.Errorf("running attempt: context %v, reason %q; want cancelled, lost", runningCtx.Err(), running.why())
	}
	if endedCtx.Err() != nil || ended.why() != "" {
		t.Errorf("ended attempt: context %v, reason %q; want untouched", endedCtx.Err(), ended.why())
	}
	if n := s.stopAll(OutcomeInterrupted); n != 1 || running.why() != OutcomeLost {
		t.Errorf("stopAll counted %d running commands, want 1 (the one whose command has not exited yet); its reason %q, want still %q",
			n, running.why(), OutcomeLost)
	}

	// A fence that fires after the command ended still gives the attempt
	// up: its lease may have passed to another worker.
	if !ended.giveUp(time.Minute) || ended.why() != outcomeFenced || endedCtx.Err() != nil {
		t.Errorf("ended attempt after its fence: reason %q, context %v; want %q, not cancelled (nothing runs)",
			ended.why(), endedCtx.Err(), outcomeFenced)
	}
	if running.giveUp(time.Minute) {
		t.Error("the fence gave up an attempt already stopped as lost")
	}

	// A fence that fires while the command runs cancels it with a cause
	// whose kill grace ends within the lease's last quarter.
	fenced, fencedCtx := add("fenced")
	if !fenced.giveUp(8 * time.Second) {
		t.Fatal("the fence did not give up a running attempt")
	}
	kg, ok := context.Cause(fencedCtx).(interface{ KillGrace() time.Duration })
	if fencedCtx.Err() == nil || !ok || kg.KillGrace() != time.Second {
		t.Errorf("fenced attempt: context %v, cause %v; want cancelled with a kill grace of 1s (an eighth of the lease)",
			fencedCtx.Err(), context.Cause(fencedCtx))
	}
}

// TestRenewalLeavesEndedFenceStopped checks that ending an attempt stops
// its fence and that a renewal arriving afterwards (its outcome waiting
// for its batch) does not start it again, while a running attempt's fence
// is moved.
func TestRenewalLeavesEndedFenceStopped(t *testing.T) {
	const lease = 40 * time.Millisecond // fences fire 30 ms after a renewal
	s := newRunningSet()
	fired := map[string]chan struct{}{}
	for _, id := range []string{"running", "ended"} {
		r := &runningJob{job: &Job{ID: id}, cancel: func(error) {}}
		ch := make(chan struct{}, 1)
		fired[id] = ch
		// Due well after end below, well within the wait for its absence.
		r.fence = time.AfterFunc(4*lease, func() { ch <- struct{}{} })
		s.add(r)
		if id == "ended" {
			r.end()
		}
	}
	s.renewed([]string{"running", "ended"}, time.Now(), lease)
	select {
	case <-fired["running"]:
	case <-time.After(10 * time.Second):
		t.Fatal("the running attempt's fence did not fire after its renewal's lease")
	}
	select {
	case <-fired["ended"]:
		t.Fatal("the fence of an attempt whose command had ended fired: end did not stop it, or a renewal started it again")
	case <-time.After(10 * lease):
	}
}
