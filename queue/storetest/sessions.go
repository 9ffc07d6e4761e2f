package storetest

import (
	"bytes"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/queuectl/queuectl/queue"
)

// sessionTests are the cases of the revoked browser sessions.
func sessionTests() []suiteCase {
	return []suiteCase{
		{"RevokedSessionsAcrossHandles", testRevokedSessions},
		{"RevokedSessionsPruned", testRevokedSessionsPruned},
		{"RevokedSessionsInCommitOrder", testRevokedSessionsInCommitOrder},
	}
}

func revoke(t *testing.T, s queue.Store, nonce string, expires, pruneBefore time.Time) {
	t.Helper()
	err := s.RevokeSession(ctx(t), queue.RevokeSessionParams{Nonce: []byte(nonce), Expires: expires, PruneBefore: pruneBefore})
	if err != nil {
		t.Fatalf("revoke %s: %v", nonce, err)
	}
}

func revoked(t *testing.T, s queue.Store, after int64, now time.Time) []queue.SessionRevocation {
	t.Helper()
	rs, err := s.RevokedSessions(ctx(t), queue.RevokedSessionsParams{After: after, Now: now})
	if err != nil {
		t.Fatalf("revoked sessions after %d: %v", after, err)
	}
	return rs
}

// nonces lists the nonces of rs, checking that their numbers grow.
func nonces(t *testing.T, rs []queue.SessionRevocation) []string {
	t.Helper()
	var out []string
	for i, r := range rs {
		if i > 0 && r.Seq <= rs[i-1].Seq {
			t.Errorf("revocation %q numbered %d after %d", r.Nonce, r.Seq, rs[i-1].Seq)
		}
		out = append(out, string(r.Nonce))
	}
	return out
}

// testRevokedSessions: a revocation one handle records, another reads,
// with its expiry; a second record of it adds nothing; a reader past a
// number gets the newer ones only; and a session expired by the reader's
// time is left out (one that expires at that very time is not).
func testRevokedSessions(t *testing.T, open Opener) {
	s, other := open(t), open(t)
	if rs := revoked(t, other, 0, t0); len(rs) != 0 {
		t.Fatalf("revoked sessions of a new store: %+v", rs)
	}
	revoke(t, s, "a\x00\xff", t0.Add(time.Hour), t0)
	revoke(t, s, "b", t0.Add(2*time.Hour), t0)
	revoke(t, other, "a\x00\xff", t0.Add(time.Hour), t0)
	rs := revoked(t, other, 0, t0)
	if got := nonces(t, rs); !equal(got, []string{"a\x00\xff", "b"}) {
		t.Fatalf("revoked sessions: %q", got)
	}
	if !rs[0].Expires.Equal(t0.Add(time.Hour)) || !rs[1].Expires.Equal(t0.Add(2*time.Hour)) || rs[0].Seq <= 0 {
		t.Errorf("revocations: %+v", rs)
	}
	if got := nonces(t, revoked(t, s, rs[0].Seq, t0)); !equal(got, []string{"b"}) {
		t.Errorf("after the first: %q", got)
	}
	if got := revoked(t, s, rs[1].Seq, t0); len(got) != 0 {
		t.Errorf("after the last: %+v", got)
	}
	if got := nonces(t, revoked(t, s, 0, t0.Add(time.Hour))); !equal(got, []string{"a\x00\xff", "b"}) {
		t.Errorf("at the first's expiry: %q", got)
	}
	if got := nonces(t, revoked(t, s, 0, t0.Add(time.Hour+time.Microsecond))); !equal(got, []string{"b"}) {
		t.Errorf("past the first's expiry: %q", got)
	}
}

// testRevokedSessionsPruned: recording a revocation deletes those whose
// sessions expired before PruneBefore, and the number of a deleted one is
// not given again, so a reader that saw it misses no newer revocation.
func testRevokedSessionsPruned(t *testing.T, open Opener) {
	s := open(t)
	revoke(t, s, "old", t0.Add(time.Hour), t0)
	revoke(t, s, "last", t0.Add(2*time.Hour), t0)
	seen := revoked(t, s, 0, t0)
	revoke(t, s, "new", t0.Add(12*time.Hour), t0.Add(3*time.Hour))
	// Read as of t0: a pruned row would still count as live.
	if got := nonces(t, revoked(t, s, 0, t0)); !equal(got, []string{"new"}) {
		t.Errorf("after pruning: %q", got)
	}
	if got := nonces(t, revoked(t, s, seen[len(seen)-1].Seq, t0)); !equal(got, []string{"new"}) {
		t.Errorf("after the last pruned one: %q", got)
	}
	revoke(t, s, "kept", t0.Add(5*time.Hour), t0.Add(5*time.Hour))
	if got := nonces(t, revoked(t, s, 0, t0)); !equal(got, []string{"new", "kept"}) {
		t.Errorf("a session expiring at PruneBefore is kept: %q", got)
	}
}

// testRevokedSessionsInCommitOrder: handles record revocations at once
// while another reads on from the last number it saw; it ends up with
// every one, so no revocation got a lower number than one already read.
func testRevokedSessionsInCommitOrder(t *testing.T, open Opener) {
	const writers, each = 4, 25
	reader, c := open(t), ctx(t)
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	for w := range writers {
		s := open(t)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				err := s.RevokeSession(c, queue.RevokeSessionParams{Nonce: fmt.Appendf(nil, "%d-%d", w, i),
					Expires: t0.Add(time.Hour), PruneBefore: t0})
				if err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	seen := map[string]bool{}
	var after int64
	read := func() {
		for _, r := range revoked(t, reader, after, t0) {
			if seen[string(r.Nonce)] {
				t.Errorf("%q read twice", r.Nonce)
			}
			seen[string(r.Nonce)] = true
			after = max(after, r.Seq)
		}
	}
	for finished := false; !finished; {
		select {
		case <-done:
			finished = true
		default:
		}
		read()
	}
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if len(seen) != writers*each {
		all := revoked(t, reader, 0, t0)
		var missed [][]byte
		for _, r := range all {
			if !seen[string(r.Nonce)] {
				missed = append(missed, r.Nonce)
			}
		}
		t.Fatalf("read %d of %d revocations on from the last number seen; missed %q", len(seen), len(all), bytes.Join(missed, []byte(" ")))
	}
}
