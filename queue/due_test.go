package queue

import (
	"context"
	"sync/atomic"
	"testing"
	"time"
)

// A lane's due flag counts once however often it is set, and once its lane
// has stopped, slots freed by jobs still running raise it no more: the
// finisher would otherwise wait for a claim that never comes.
func TestDueFlagStaysDownOnceStopped(t *testing.T) {
	var count atomic.Int32
	d := &dueFlag{count: &count}
	d.set()
	d.set()
	if n := count.Load(); n != 1 {
		t.Fatalf("set twice: count %d, want 1", n)
	}
	d.clear()
	d.clear()
	if n := count.Load(); n != 0 {
		t.Fatalf("cleared twice: count %d, want 0", n)
	}
	d.set()
	d.stop()
	if n := count.Load(); n != 0 {
		t.Fatalf("stopped while set: count %d, want 0", n)
	}
	d.set()
	if n := count.Load(); n != 0 {
		t.Fatalf("set after stop: count %d, want 0", n)
	}
}

// claimer is a FinishClaimer that claims nothing and counts its calls;
// no other Store method is called.
type claimer struct {
	Store
	calls atomic.Int32
}

func (c *claimer) FinishAndClaim(_ context.Context, fs []Finish, cs []ClaimParams) ([]bool, [][]*Job, error) {
	c.calls.Add(1)
	return make([]bool, len(fs)), make([][]*Job, len(cs)), nil
}

// A claim the finisher does not take (here it is not running) is not
// sent: the lane claims on its own instead of waiting behind a batch.
func TestClaimNotTakenIsNotSent(t *testing.T) {
	st := &claimer{}
	f := newFinisher(st, func(error, int) {})
	var count atomic.Int32
	due := &dueFlag{count: &count}
	due.set()
	if _, sent, err := f.claim(ClaimParams{Limit: 1}, due); sent || err != nil {
		t.Fatalf("claim with no finisher running: sent %v, err %v; want not sent", sent, err)
	}
	if n := count.Load(); n != 1 {
		t.Fatalf("a claim not sent cleared its lane's due flag (count %d); the caller clears it", n)
	}
}

// While a batch is being written a claim is not even offered: it would
// wait behind the batch. Once the finisher is idle it takes the claim,
// and the claim clears its lane's due flag.
func TestClaimSkipsABusyFinisher(t *testing.T) {
	st := &claimer{}
	f := newFinisher(st, func(error, int) {})
	f.start()
	defer f.close()
	var count atomic.Int32
	due := &dueFlag{count: &count}
	due.set()
	f.busy.Store(true)
	if _, sent, _ := f.claim(ClaimParams{Limit: 1}, due); sent || st.calls.Load() != 0 {
		t.Fatalf("claim while a batch is written: sent %v, store calls %d; want not sent", sent, st.calls.Load())
	}
	f.busy.Store(false)
	// An idle finisher's loop takes the claim once it is scheduled: on a
	// loaded machine that may be later than the claim waits (claimWait),
	// and a claim not taken is a claim not sent, so offer it until taken.
	deadline := time.Now().Add(10 * time.Second)
	for {
		_, sent, err := f.claim(ClaimParams{Limit: 1}, due)
		if err != nil {
			t.Fatalf("claim to an idle finisher: %v", err)
		}
		if sent {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("claim to an idle finisher: never taken in 10s")
		}
	}
	if n := st.calls.Load(); n != 1 {
		t.Fatalf("claim to an idle finisher: %d store calls, want one", n)
	}
	if n := count.Load(); n != 0 {
		t.Fatalf("a claim taken into a batch left its lane's due flag raised (count %d)", n)
	}
}
