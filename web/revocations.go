package web

import (
	"context"
	"net/http"
	"sync"
	"time"

	"github.com/queuectl/queuectl/queue"
)

const (
	// revocationsFresh is how old the sign-outs a session is checked
	// against may be: a session signed out in one process is refused by
	// every process sharing the store from this long after the sign-out
	// was recorded.
	revocationsFresh = 2 * time.Second
	// revocationsReadTimeout bounds one read of the store's sign-outs.
	revocationsReadTimeout = 5 * time.Second
	// streamCheck is how often a response that streams checks that its
	// session was not signed out (whileSignedIn); it reads the store no
	// more often than any other check does.
	streamCheck = 500 * time.Millisecond
	// revocationKeep is how long the store keeps a sign-out past its
	// session's expiry, so that a process whose clock runs behind the
	// signing-out one's still refuses the session.
	revocationKeep = time.Hour
)

// revocationStore is what sign-outs need of the store.
type revocationStore interface {
	RevokeSession(ctx context.Context, p queue.RevokeSessionParams) error
	RevokedSessions(ctx context.Context, p queue.RevokedSessionsParams) ([]queue.SessionRevocation, error)
}

// revocations are the sessions signed out in any process sharing the
// store. They are kept in memory and read from the store when a session
// is checked and the last read started fresh or longer ago, asking only
// for sign-outs newer than the last one read: a process pays at most one
// read per interval, and none while no session comes.
type revocations struct {
	store revocationStore
	now   func() time.Time // the sessions' clock, for expiries
	fresh time.Duration    // revocationsFresh

	mu      sync.Mutex
	revoked map[string]int64 // nonce → its session's expiry (Unix seconds)
	after   int64            // the number of the last sign-out read
	readAt  time.Time        // when the last successful read started
	reading chan struct{}    // closed when the read in flight ends; nil if none
	waiting int              // checks waiting for the read in flight
	readErr error            // the last read's error
}

func newRevocations(st revocationStore, now func() time.Time) *revocations {
	return &revocations{store: st, now: now, fresh: revocationsFresh, revoked: map[string]int64{}}
}

// refused reports whether the session named by nonce was signed out. A
// session signed out here is refused at once; one signed out elsewhere
// once the store has been read after its sign-out, which a check of a
// session makes sure of for every sign-out recorded fresh before it.
// When the store cannot be read it returns the error: the session is
// neither accepted nor ended.
func (rv *revocations) refused(ctx context.Context, nonce []byte) (bool, error) {
	arrived := time.Now()
	rv.mu.Lock()
	defer rv.mu.Unlock()
	if _, out := rv.revoked[string(nonce)]; out {
		return true, nil
	}
	for arrived.Sub(rv.readAt) >= rv.fresh {
		var err error
		if rv.reading == nil {
			err = rv.readLocked(ctx)
		} else {
			err = rv.waitLocked(ctx)
		}
		if err != nil {
			return false, err
		}
	}
	_, out := rv.revoked[string(nonce)]
	return out, nil
}

// readLocked reads the sign-outs newer than the last one read. One read
// runs at a time: checks that arrive meanwhile wait for it (waitLocked).
// It is called with rv.mu held and returns with it held; the read itself
// runs without it, and outlives the request that started it (the checks
// waiting for it are other requests').
func (rv *revocations) readLocked(ctx context.Context) error {
	done := make(chan struct{})
	rv.reading = done
	after, start, now := rv.after, time.Now(), rv.now()
	rv.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), revocationsReadTimeout)
	rs, err := rv.store.RevokedSessions(ctx, queue.RevokedSessionsParams{After: after, Now: time.Unix(now.Unix(), 0)})
	cancel()
	rv.mu.Lock()
	rv.reading, rv.readErr = nil, err
	close(done)
	if err != nil {
		return err
	}
	for _, r := range rs {
		rv.revoked[string(r.Nonce)] = r.Expires.Unix()
		rv.after = max(rv.after, r.Seq)
	}
	rv.pruneLocked(now.Unix())
	rv.readAt = start
	return nil
}

// waitLocked waits for the read in flight and returns its error: when the
// store does not answer, the checks that arrived during one read share its
// failure rather than each trying a read of its own in turn. It is called
// with rv.mu held and returns with it held.
func (rv *revocations) waitLocked(ctx context.Context) error {
	wait := rv.reading
	rv.waiting++
	rv.mu.Unlock()
	var err error
	select {
	case <-wait:
	case <-ctx.Done():
		err = ctx.Err()
	}
	rv.mu.Lock()
	rv.waiting--
	if err != nil {
		return err
	}
	return rv.readErr
}

// record signs out the session nonce that expires at expires: this
// process refuses it from now on, and the store tells the others.
func (rv *revocations) record(ctx context.Context, nonce []byte, expires int64) error {
	now := rv.now()
	rv.mu.Lock()
	rv.pruneLocked(now.Unix())
	rv.revoked[string(nonce)] = expires
	rv.mu.Unlock()
	return rv.store.RevokeSession(ctx, queue.RevokeSessionParams{Nonce: nonce, Expires: time.Unix(expires, 0),
		PruneBefore: now.Add(-revocationKeep)})
}

// pruneLocked forgets the sessions expired by now (Unix seconds): they
// are refused anyway.
func (rv *revocations) pruneLocked(now int64) {
	for k, until := range rv.revoked {
		if until < now {
			delete(rv.revoked, k)
		}
	}
}

// whileSignedIn is the request's context, ended once the session the
// request came with expires or is signed out, in any process: a response
// that streams (job events, followed output) ends with its session, as a
// new request with the cookie would be refused. A check that cannot read
// the store ends nothing (the stream reads the same store, and fails by
// itself if it is gone). It also ends when the server shuts down.
func (s *Server) whileSignedIn(r *http.Request) (context.Context, context.CancelFunc) {
	ctx, cancel := untilShutdown(r)
	id := identityOf(r)
	nonce := id.session
	if nonce == nil {
		return ctx, cancel
	}
	go func() {
		t := time.NewTicker(streamCheck)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
			// A check that cannot read the store reports no sign-out.
			if out, _ := s.auth.revocations.refused(ctx, nonce); out || s.now().Unix() > id.expires {
				cancel()
				return
			}
		}
	}()
	return ctx, cancel
}
