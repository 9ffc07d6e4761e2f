package web

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/queuectl/queuectl/internal/testfs"
	"github.com/queuectl/queuectl/queue"
	"github.com/queuectl/queuectl/queue/sqlite"
)

// signOut signs the session c out through the page's form and checks
// that the cookie is cleared.
func (h *harness) signOut(c *http.Cookie) {
	h.t.Helper()
	rec := h.must(req{method: "POST", path: "/logout", cookies: []*http.Cookie{c},
		header: map[string]string{"Content-Type": "application/x-www-form-urlencoded", "Accept": "text/html"}}, http.StatusSeeOther)
	if !clearsSession(rec) {
		h.t.Fatal("signing out left the cookie")
	}
}

func clearsSession(rec *httptest.ResponseRecorder) bool {
	for _, k := range rec.Result().Cookies() {
		if k.Name == sessionCookie && k.MaxAge < 0 {
			return true
		}
	}
	return false
}

// status asks for the API status with the session c.
func (h *harness) status(c *http.Cookie) int {
	h.t.Helper()
	return h.do(req{path: "/api/v1/status", cookies: []*http.Cookie{c}}).Code
}

// Two servers serving the same tokens from the same database, as two
// processes would: a session signed out on one is refused by the other
// from revocationsFresh after the sign-out on (a request that comes later
// and is accepted fails the test), while another session goes on; a
// server started afterwards refuses it at once.
func TestSignOutEndsTheSessionInEveryProcess(t *testing.T) {
	for _, sk := range stores() {
		t.Run(sk.name, func(t *testing.T) {
			open := sk.database(t)
			a := newHarness(t, open(), adminToken, viewerToken)
			b := newHarness(t, open(), adminToken, viewerToken)
			c, other := a.signIn(adminToken), a.signIn(viewerToken)
			// b accepts a's sessions, and has read the sign-outs (none yet).
			if code := b.status(c); code != http.StatusOK {
				t.Fatalf("the other server before the sign-out: %d", code)
			}
			a.signOut(c)
			signedOut := time.Now()
			if code := a.status(c); code != http.StatusUnauthorized {
				t.Fatalf("the signing-out server after the sign-out: %d", code)
			}
			for {
				asked := time.Now()
				code := b.status(c)
				if code == http.StatusUnauthorized {
					t.Logf("refused %s after the sign-out", asked.Sub(signedOut))
					break
				}
				if code != http.StatusOK {
					t.Fatalf("the other server: %d", code)
				}
				if after := asked.Sub(signedOut); after >= revocationsFresh {
					t.Fatalf("the other server accepted the session %s after the sign-out (bound %s)", after, revocationsFresh)
				}
				time.Sleep(10 * time.Millisecond) // between polls
			}
			if code := b.status(other); code != http.StatusOK {
				t.Errorf("another session on the other server: %d", code)
			}
			if code := newHarness(t, open(), adminToken, viewerToken).status(c); code != http.StatusUnauthorized {
				t.Errorf("a server started after the sign-out: %d", code)
			}
		})
	}
}

// revocationProbe is a store whose sign-out reads are counted, and whose
// reads and records of sign-outs can be made to fail or to wait.
type revocationProbe struct {
	queue.Store
	mu          sync.Mutex
	reads       []int64 // After of each read
	failReads   error
	failRecords error
	hold        chan struct{} // when set, a read waits for it to close
}

func (p *revocationProbe) RevokedSessions(ctx context.Context, q queue.RevokedSessionsParams) ([]queue.SessionRevocation, error) {
	p.mu.Lock()
	p.reads = append(p.reads, q.After)
	hold, err := p.hold, p.failReads
	p.mu.Unlock()
	if hold != nil {
		<-hold
	}
	if err != nil {
		return nil, err
	}
	return p.Store.RevokedSessions(ctx, q)
}

func (p *revocationProbe) RevokeSession(ctx context.Context, q queue.RevokeSessionParams) error {
	p.mu.Lock()
	err := p.failRecords
	p.mu.Unlock()
	if err != nil {
		return err
	}
	return p.Store.RevokeSession(ctx, q)
}

func (p *revocationProbe) set(fn func(p *revocationProbe)) {
	p.mu.Lock()
	defer p.mu.Unlock()
	fn(p)
}

func (p *revocationProbe) readAfters() []int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]int64(nil), p.reads...)
}

// A session check reads the store's sign-outs only when the last read is
// revocationsFresh old, and then only those newer than the last it read;
// bearer tokens and requests without a session read none.
func TestSessionChecksReadTheStoreOncePerInterval(t *testing.T) {
	probe := &revocationProbe{Store: openSQLite(t)}
	h := newHarness(t, probe, adminToken, viewerToken)
	h.srv.auth.revocations.fresh = time.Hour
	c, gone := h.signIn(adminToken), h.signIn(viewerToken)
	for range 10 {
		if code := h.status(c); code != http.StatusOK {
			t.Fatalf("session: %d", code)
		}
		h.must(req{path: "/api/v1/status", token: viewerToken}, http.StatusOK)
		h.must(req{path: "/api/v1/status"}, http.StatusUnauthorized)
	}
	if got := probe.readAfters(); len(got) != 1 || got[0] != 0 {
		t.Fatalf("reads after 10 requests with a session: %v, want one of all", got)
	}
	h.signOut(gone)
	h.srv.auth.revocations.fresh = 0 // every check reads
	h.status(c)
	h.status(c)
	if got := probe.readAfters(); len(got) != 3 || got[1] != 0 || got[2] <= 0 {
		t.Errorf("reads: %v, want all, all, then after the sign-out read", got)
	}
}

// When the store cannot be read, a session is refused with 503 (not sent
// to sign in again) and works again once it can; bearer tokens do not
// depend on it. A sign-out the store cannot record ends the session here,
// keeps the cookie and says so; signing out again records it for the
// other servers.
func TestSessionCheckFailsClosed(t *testing.T) {
	open := sqliteDatabase(t)
	probe := &revocationProbe{Store: open()}
	h := newHarness(t, probe, adminToken, viewerToken)
	h.srv.auth.revocations.fresh = 0
	c := h.signIn(adminToken)
	probe.set(func(p *revocationProbe) { p.failReads = errors.New("connection refused") })
	if e := errCode(t, h.must(req{path: "/api/v1/status", cookies: []*http.Cookie{c}}, http.StatusServiceUnavailable)); e.Code != codeUnavailable {
		t.Errorf("API with a session: %+v", e)
	}
	h.must(req{path: "/jobs", cookies: []*http.Cookie{c}, header: map[string]string{"Accept": "text/html"}}, http.StatusServiceUnavailable)
	h.must(req{path: "/api/v1/status", token: adminToken}, http.StatusOK)
	probe.set(func(p *revocationProbe) { p.failReads = nil })
	if code := h.status(c); code != http.StatusOK {
		t.Fatalf("once the store answers: %d", code)
	}

	probe.set(func(p *revocationProbe) { p.failRecords = errors.New("connection refused") })
	rec := h.must(req{method: "POST", path: "/logout", cookies: []*http.Cookie{c}, header: map[string]string{"Accept": "text/html"}},
		http.StatusServiceUnavailable)
	if clearsSession(rec) {
		t.Error("a sign-out the store did not record cleared the cookie")
	}
	if !strings.Contains(rec.Body.String(), `id="sign-out-again"`) {
		t.Errorf("the page of a sign-out the store did not record offers no other: %s", rec.Body.String())
	}
	if code := h.status(c); code != http.StatusUnauthorized {
		t.Errorf("this server after the failed sign-out: %d", code)
	}
	other := newHarness(t, open(), adminToken, viewerToken)
	if code := other.status(c); code != http.StatusOK {
		t.Fatalf("another server after the failed sign-out: %d", code)
	}
	other.srv.auth.revocations.fresh = 0
	probe.set(func(p *revocationProbe) { p.failRecords = nil })
	h.signOut(c)
	if code := other.status(c); code != http.StatusUnauthorized {
		t.Errorf("another server after signing out again: %d", code)
	}
}

// Checks that arrive while a read of the sign-outs is in flight wait for
// it and share its failure: a store that does not answer costs one read,
// not one per check.
func TestSessionChecksShareOneRead(t *testing.T) {
	const checks = 5
	probe := &revocationProbe{Store: openSQLite(t), hold: make(chan struct{}), failReads: errors.New("timeout")}
	h := newHarness(t, probe, adminToken, viewerToken)
	c := h.signIn(adminToken)
	codes := make(chan int, checks)
	for range checks {
		go func() { codes <- h.status(c) }()
	}
	rv := h.srv.auth.revocations
	deadline := time.Now().Add(10 * time.Second)
	for {
		rv.mu.Lock()
		waiting := rv.waiting
		rv.mu.Unlock()
		if waiting == checks-1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d checks wait for the read, want %d", waiting, checks-1)
		}
		time.Sleep(time.Millisecond)
	}
	close(probe.hold)
	for range checks {
		if code := <-codes; code != http.StatusServiceUnavailable {
			t.Errorf("check: %d", code)
		}
	}
	if got := probe.readAfters(); len(got) != 1 {
		t.Errorf("%d reads for %d checks", len(got), checks)
	}
}

// A job's event stream and its followed output, opened on one server with
// a session, end once the session is signed out on another.
func TestSignOutEndsStreams(t *testing.T) {
	open := sqliteDatabase(t)
	a := newHarness(t, open(), adminToken, viewerToken)
	b := newHarness(t, open(), adminToken, viewerToken)
	a.enqueue(`{"id":"s","command":"true"}`) // pending: neither stream ends by itself
	srv := httptest.NewServer(b.srv.Handler())
	defer srv.Close()
	for _, path := range []string{"/api/v1/jobs/s/events", "/api/v1/jobs/s/output?follow=1"} {
		c := a.signIn(adminToken)
		resp := openStream(t, srv.URL+path, c)
		a.signOut(c)
		_, err := io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if err != nil {
			t.Errorf("%s: the stream did not end after the sign-out: %v", path, err)
		}
	}
}

// A stream opened with a session ends when the session expires, as a new
// request with its cookie would be refused.
func TestStreamsEndWhenTheirSessionExpires(t *testing.T) {
	h := newHarness(t, sqliteDatabase(t)(), adminToken, viewerToken)
	h.enqueue(`{"id":"s","command":"true"}`) // pending: neither stream ends by itself
	srv := httptest.NewServer(h.srv.Handler())
	defer srv.Close()
	for _, path := range []string{"/api/v1/jobs/s/events", "/api/v1/jobs/s/output?follow=1"} {
		resp := openStream(t, srv.URL+path, h.signIn(viewerToken))
		h.clock.Advance(sessionTTL + time.Minute)
		_, err := io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if err != nil {
			t.Errorf("%s: the stream did not end when its session expired: %v", path, err)
		}
	}
}

// openStream opens the streaming response at url with cookie c, for 30
// seconds at most.
func openStream(t *testing.T, url string, c *http.Cookie) *http.Response {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	hr, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	hr.AddCookie(c)
	resp, err := http.DefaultClient.Do(hr)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("%s: %d", url, resp.StatusCode)
	}
	return resp
}

// On a database no process can write (a read-only filesystem), signing out
// cannot be recorded, nor would signing out again: it ends the session in
// this process and clears the cookie rather than offering a retry.
func TestSignOutOnAReadOnlyDatabase(t *testing.T) {
	h := readOnlyHarness(t, func(*harness) {})
	c := h.signIn(viewerToken)
	h.signOut(c) // a redirect to sign in, the cookie cleared
	h.must(req{path: "/api/v1/status", cookies: []*http.Cookie{c}}, http.StatusUnauthorized)
}

// A database served only to be read (a read-only filesystem) answers an
// action 503 unavailable saying the database is read-only, a known state
// rather than an internal error, and still answers reads.
func TestActionsOnAReadOnlyDatabase(t *testing.T) {
	h := readOnlyHarness(t, func(h *harness) { h.enqueue(`{"id": "j", "command": "true"}`) })
	for _, r := range []req{
		{method: "POST", path: "/api/v1/jobs", body: `{"command":"true"}`},
		{method: "POST", path: "/api/v1/jobs/j/cancel"},
		{method: "POST", path: "/api/v1/queues/default/pause"},
	} {
		r.token = adminToken
		e := errCode(t, h.must(r, http.StatusServiceUnavailable))
		if e.Code != codeUnavailable || !strings.Contains(e.Message, "read-only") {
			t.Errorf("%s %s: %+v", r.method, r.path, e)
		}
	}
	h.must(req{path: "/api/v1/jobs/j", token: viewerToken}, http.StatusOK)
}

// A database whose disk is full answers an action 503 unavailable saying
// to try again, a state that passes rather than an internal error, and
// changes nothing.
func TestActionsOnAFullDisk(t *testing.T) {
	dir := testfs.Small(t, "8m")
	st, err := sqlite.Open(context.Background(), filepath.Join(dir, "queue.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	h := newHarness(t, st, adminToken, viewerToken)
	h.enqueue(`{"id": "j", "command": "true"}`)
	testfs.Fill(t, filepath.Join(dir, "filler"))
	e := errCode(t, h.must(req{method: "POST", path: "/api/v1/jobs", token: adminToken,
		body: `{"command":"` + strings.Repeat("x", 64<<10) + `"}`}, http.StatusServiceUnavailable))
	if e.Code != codeUnavailable || !strings.Contains(e.Message, "try again") {
		t.Errorf("enqueue on a full disk: %+v", e)
	}
	if jobs, err := st.ListJobs(context.Background(), queue.ListParams{}); err != nil || len(jobs) != 1 {
		t.Errorf("jobs after the refused enqueue: %d, %v", len(jobs), err)
	}
}

// readOnlyHarness is a harness on a SQLite database that seed filled, on a
// filesystem then made read-only: the store opens it to be read only.
func readOnlyHarness(t *testing.T, seed func(*harness)) *harness {
	t.Helper()
	dir := testfs.Small(t, "8m")
	path := filepath.Join(dir, "queue.db")
	st, err := sqlite.Open(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	seed(newHarness(t, st, adminToken, viewerToken))
	st.Close()
	testfs.ReadOnly(t, dir)
	ro, err := sqlite.Open(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ro.Close() })
	return newHarness(t, ro, adminToken, viewerToken)
}
