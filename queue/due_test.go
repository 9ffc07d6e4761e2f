package queue

import (
	"sync/atomic"
	"testing"
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

// A claim the finisher does not take (it is writing a batch, or here not
// running at all) is not sent: the lane claims on its own instead of
// waiting behind the batch's retries.
func TestClaimNotTakenIsNotSent(t *testing.T) {
	f := newFinisher(nil, func(error, int) {})
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
