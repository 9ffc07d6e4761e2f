package web

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/queuectl/queuectl/queue"
)

// role is what a request may do.
type role int

const (
	roleNone   role = iota
	roleViewer      // reads everything but job environment values
	roleAdmin       // reads everything and acts
)

func (r role) String() string {
	switch r {
	case roleAdmin:
		return "admin"
	case roleViewer:
		return "viewer"
	}
	return "none"
}

const (
	sessionCookie = "queuectl_session"
	sessionTTL    = 12 * time.Hour
	csrfField     = "csrf"
	csrfHeader    = "X-CSRF-Token"
)

// authenticator decides who a request comes from. API clients send
// "Authorization: Bearer TOKEN"; browsers sign in once and then send a
// session cookie signed with a key derived from the tokens, so every
// process that serves the same tokens accepts it and rotating a token ends
// every session. Signing out ends one session in every process that shares
// the store (revocations).
type authenticator struct {
	admin, viewer [sha256.Size]byte // token hashes; zero when not configured
	hasAdmin      bool
	hasViewer     bool
	key           []byte // HMAC key of sessions and CSRF tokens
	now           func() time.Time
	throttle      *throttle
	revocations   *revocations
}

func newAuthenticator(admin, viewer string, st revocationStore, now func() time.Time) (*authenticator, error) {
	a := &authenticator{hasAdmin: admin != "", hasViewer: viewer != "", now: now, throttle: newThrottle(now),
		revocations: newRevocations(st, now)}
	a.admin, a.viewer = sha256.Sum256([]byte(admin)), sha256.Sum256([]byte(viewer))
	if a.open() {
		// No tokens: a per-process key still signs the CSRF token.
		a.key = make([]byte, 32)
		if _, err := rand.Read(a.key); err != nil {
			return nil, err
		}
	} else {
		m := hmac.New(sha256.New, []byte("queuectl session key"))
		m.Write([]byte(admin + "\x00" + viewer))
		a.key = m.Sum(nil)
	}
	return a, nil
}

// open reports whether no token is configured: everyone is admin, and the
// server listens on loopback only.
func (a *authenticator) open() bool { return !a.hasAdmin && !a.hasViewer }

// tokenRole compares a presented token with both tokens in constant time.
func (a *authenticator) tokenRole(token string) role {
	if token == "" {
		return roleNone
	}
	h := sha256.Sum256([]byte(token))
	isAdmin := subtle.ConstantTimeCompare(h[:], a.admin[:]) & boolInt(a.hasAdmin)
	isViewer := subtle.ConstantTimeCompare(h[:], a.viewer[:]) & boolInt(a.hasViewer)
	switch {
	case isAdmin == 1:
		return roleAdmin
	case isViewer == 1:
		return roleViewer
	}
	return roleNone
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// identity is who a request comes from and how it proved it.
type identity struct {
	role    role
	bearer  bool   // an Authorization header: not a browser's ambient credential
	session []byte // the session nonce, for the CSRF token
	expires int64  // the session's expiry (Unix seconds); 0 without one
}

// errThrottled: a bearer token was not checked because its address is
// throttled.
var errThrottled = errorf(http.StatusTooManyRequests, codeThrottled, "too many failed sign-ins from this address; try again later")

// identify returns the request's identity: roleNone when it proves none.
// It fails with errThrottled, or, when the sign-outs a session must be
// checked against cannot be read, with an unavailableError (fail closed:
// the session is not accepted, nor is it ended).
func (a *authenticator) identify(r *http.Request) (identity, error) {
	if a.open() {
		return identity{role: roleAdmin}, nil
	}
	if h := r.Header.Get("Authorization"); h != "" {
		rl, ok := a.signIn(r.Context(), clientAddr(r), bearerToken(h))
		if !ok {
			return identity{}, errThrottled
		}
		return identity{role: rl, bearer: true}, nil
	}
	c, err := r.Cookie(sessionCookie)
	if err != nil {
		return identity{}, nil
	}
	ses, ok := a.verifySession(c.Value)
	if !ok {
		return identity{}, nil
	}
	out, err := a.revocations.refused(r.Context(), ses.nonce)
	if err != nil {
		return identity{}, &unavailableError{msg: "the database did not answer, so the session could not be checked", err: err}
	}
	if out {
		return identity{}, nil
	}
	return identity{role: ses.role, session: ses.nonce, expires: ses.expires}, nil
}

// bearerToken is the token of an Authorization header. Its scheme is
// case-insensitive (RFC 9110, 11.1): clients send "bearer" too. A header
// of another scheme is taken whole, as a wrong token.
func bearerToken(header string) string {
	const scheme = "bearer "
	if len(header) >= len(scheme) && strings.EqualFold(header[:len(scheme)], scheme) {
		header = header[len(scheme):]
	}
	return strings.TrimSpace(header)
}

// signIn checks a token presented from addr, through the throttle: it
// reports false, and checks nothing, when the address must wait and
// another attempt from it is waiting already.
func (a *authenticator) signIn(ctx context.Context, addr, token string) (role, bool) {
	if !a.throttle.admit(ctx, addr) {
		return roleNone, false
	}
	rl := a.tokenRole(token)
	if rl == roleNone {
		a.throttle.failed(addr)
	} else {
		a.throttle.succeeded(addr, rl)
	}
	return rl, true
}

// newSession returns a signed session value for role: role, expiry, nonce.
func (a *authenticator) newSession(rl role) (string, error) {
	payload := make([]byte, 1+8+16)
	payload[0] = byte(rl)
	binary.BigEndian.PutUint64(payload[1:9], uint64(a.now().Add(sessionTTL).Unix()))
	if _, err := rand.Read(payload[9:]); err != nil {
		return "", err
	}
	return b64(payload) + "." + b64(a.sign("session", payload)), nil
}

// session is a verified session cookie's content.
type session struct {
	role    role
	expires int64  // Unix seconds
	nonce   []byte // random, names the session (CSRF tokens, revocation)
}

// verifySession checks a session cookie's signature, expiry and role; not
// whether it was signed out (revocations).
func (a *authenticator) verifySession(v string) (session, bool) {
	p, sig, ok := strings.Cut(v, ".")
	if !ok {
		return session{}, false
	}
	payload, err1 := base64.RawURLEncoding.DecodeString(p)
	mac, err2 := base64.RawURLEncoding.DecodeString(sig)
	if err1 != nil || err2 != nil || len(payload) != 25 || !hmac.Equal(mac, a.sign("session", payload)) {
		return session{}, false
	}
	s := session{role: role(payload[0]), expires: int64(binary.BigEndian.Uint64(payload[1:9])), nonce: payload[9:]}
	if s.expires < a.now().Unix() {
		return session{}, false
	}
	if rl := s.role; (rl == roleAdmin && !a.hasAdmin) || (rl == roleViewer && !a.hasViewer) || rl == roleNone || rl > roleAdmin {
		return session{}, false
	}
	return s, true
}

// errSignOutUnrecorded is a sign-out the store did not record; its error
// page offers to sign out again.
var errSignOutUnrecorded = errors.New("sign-out not recorded")

// revoke ends the session v, though its signature stays valid until it
// expires: this process refuses it at once, and the others sharing the
// store refuse it revocationsFresh after the store recorded it at the
// latest. It fails when the store could not record it; the session is
// then refused here only, and signing out again (a session signed out
// here still verifies) records it.
func (a *authenticator) revoke(ctx context.Context, v string) error {
	s, ok := a.verifySession(v)
	if !ok {
		return nil
	}
	err := a.revocations.record(ctx, s.nonce, s.expires)
	if errors.Is(err, queue.ErrReadOnly) {
		return err // no retry can record it (logout)
	}
	if err != nil {
		return &unavailableError{msg: "signed out of this server, but the database did not record it for the others: sign out again",
			err: fmt.Errorf("%w: %w", errSignOutUnrecorded, err)}
	}
	return nil
}

// csrfToken is the token a page embeds in its forms: bound to the session
// (or, without tokens, to this process).
func (a *authenticator) csrfToken(id identity) string {
	return b64(a.sign("csrf", id.session))
}

// checkCSRF guards a state-changing request. A bearer token is no ambient
// credential, so it needs no CSRF token. A browser request must carry the
// page's CSRF token; a request from another site is refused outright. The
// token comes in the X-CSRF-Token header, or, when form is set (the
// dashboard's own forms), in the form field csrf: reading that field
// consumes the body, which an API handler must still decode.
func (a *authenticator) checkCSRF(r *http.Request, id identity, form bool) bool {
	if id.bearer {
		return true
	}
	if site := r.Header.Get("Sec-Fetch-Site"); site != "" && site != "same-origin" && site != "none" {
		return false
	}
	if origin := r.Header.Get("Origin"); origin != "" && !sameOrigin(origin, r) {
		return false
	}
	got := r.Header.Get(csrfHeader)
	if got == "" && form {
		got = r.PostFormValue(csrfField)
	}
	if got == "" && a.open() && r.Header.Get("Origin") == "" && r.Header.Get("Sec-Fetch-Site") == "" {
		// No tokens and no sign of a browser (curl on the loopback host).
		return true
	}
	return hmac.Equal([]byte(got), []byte(a.csrfToken(id)))
}

func sameOrigin(origin string, r *http.Request) bool {
	scheme := "http://"
	if isTLS(r) {
		scheme = "https://"
	}
	return strings.EqualFold(origin, scheme+r.Host)
}

// isTLS reports whether the client reached us over TLS: directly, or
// through a proxy that says so.
func isTLS(r *http.Request) bool {
	return r.TLS != nil || strings.EqualFold(r.Header.Get("X-Forwarded-Proto"), "https")
}

func (a *authenticator) sign(purpose string, b []byte) []byte {
	m := hmac.New(sha256.New, a.key)
	m.Write([]byte(purpose))
	m.Write([]byte{0})
	m.Write(b)
	return m.Sum(nil)
}

func b64(b []byte) string { return base64.RawURLEncoding.EncodeToString(b) }

// throttle slows repeated failed sign-ins from one address, through the
// sign-in form or with a bearer token: each failure doubles the wait before
// the next attempt from that address is checked, up to maxDelay, until a
// quarter of an hour passes without one. While an address waits, a second
// attempt from it is refused at once without being checked, so parallel
// guesses gain nothing. Only an admin sign-in clears the failures (a viewer
// token must not reset the wait of someone guessing the admin token).
type throttle struct {
	mu    sync.Mutex
	now   func() time.Time
	fails map[string]failures
}

type failures struct {
	n       int
	last    time.Time
	waiting bool // an attempt from the address waits to be checked
}

const (
	baseDelay    = 250 * time.Millisecond
	maxDelay     = 8 * time.Second
	forgetAfter  = 15 * time.Minute
	maxTrackedIP = 10000
)

func newThrottle(now func() time.Time) *throttle {
	return &throttle{now: now, fails: map[string]failures{}}
}

// delay is how long to wait before checking a sign-in from addr.
func (t *throttle) delay(addr string) time.Duration {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.delayLocked(addr)
}

func (t *throttle) delayLocked(addr string) time.Duration {
	f, ok := t.fails[addr]
	if !ok || f.n == 0 || t.now().Sub(f.last) > forgetAfter {
		return 0
	}
	return min(maxDelay, baseDelay<<min(f.n-1, 16))
}

// admit waits, before a sign-in from addr is checked, for as long as the
// address's failures say. It reports false, at once, when another attempt
// from addr is waiting, or when ctx ends first.
func (t *throttle) admit(ctx context.Context, addr string) bool {
	t.mu.Lock()
	d := t.delayLocked(addr)
	if d == 0 {
		t.mu.Unlock()
		return true
	}
	f := t.fails[addr]
	if f.waiting {
		t.mu.Unlock()
		return false
	}
	f.waiting = true
	t.fails[addr] = f
	t.mu.Unlock()
	defer func() {
		t.mu.Lock()
		if f, ok := t.fails[addr]; ok {
			f.waiting = false
			t.fails[addr] = f
		}
		t.mu.Unlock()
	}()
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-timer.C:
		return true
	case <-ctx.Done():
		return false
	}
}

func (t *throttle) failed(addr string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	now := t.now()
	if len(t.fails) >= maxTrackedIP {
		for k, f := range t.fails {
			if now.Sub(f.last) > forgetAfter && !f.waiting {
				delete(t.fails, k)
			}
		}
	}
	f := t.fails[addr]
	if now.Sub(f.last) > forgetAfter {
		f.n = 0
	}
	f.n++
	f.last = now
	t.fails[addr] = f
}

// succeeded records a sign-in with rl: an admin's clears the failures.
func (t *throttle) succeeded(addr string, rl role) {
	if rl != roleAdmin {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if f, ok := t.fails[addr]; ok {
		f.n = 0
		t.fails[addr] = f
	}
}

// clientAddr is the request's remote IP address.
func clientAddr(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}
