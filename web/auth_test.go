package web

import (
	"errors"
	"html"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/queuectl/queuectl/internal/testutil/fakeclock"
	"github.com/queuectl/queuectl/queue"
)

func TestSignInSetsAStrictSessionCookie(t *testing.T) {
	h := tokens(t)
	form := map[string]string{"Content-Type": "application/x-www-form-urlencoded"}
	rec := h.must(req{method: "POST", path: "/login", body: "token=wrong&next=/jobs", header: form}, http.StatusUnauthorized)
	if !strings.Contains(rec.Body.String(), "not valid") || len(rec.Result().Cookies()) != 0 {
		t.Fatalf("wrong token: %s", rec.Body.String())
	}
	c := h.signIn(adminToken)
	if !c.HttpOnly || c.SameSite != http.SameSiteStrictMode || c.Secure || c.Path != "/" {
		t.Errorf("cookie: %+v", c)
	}
	if strings.Contains(c.Value, adminToken) {
		t.Error("the cookie carries the token")
	}
	rec = h.must(req{method: "POST", path: "/login", body: "token=" + adminToken,
		header: map[string]string{"Content-Type": "application/x-www-form-urlencoded", "X-Forwarded-Proto": "https"}}, http.StatusSeeOther)
	if !rec.Result().Cookies()[0].Secure {
		t.Error("behind TLS the cookie must be Secure")
	}
	body, _ := h.page("/", c)
	if strings.Contains(body, adminToken) {
		t.Error("a page shows the token")
	}
	// The session works for the API too, and a forged one does not.
	h.must(req{path: "/api/v1/status", cookies: []*http.Cookie{c}}, http.StatusOK)
	forged := *c
	forged.Value = strings.Replace(c.Value, c.Value[:2], "AA", 1)
	h.must(req{path: "/api/v1/status", cookies: []*http.Cookie{&forged}}, http.StatusUnauthorized)
	// Expired.
	h.clock.Advance(sessionTTL + time.Minute)
	h.must(req{path: "/api/v1/status", cookies: []*http.Cookie{c}}, http.StatusUnauthorized)
}

func TestPagesSendBrowsersToSignIn(t *testing.T) {
	h := tokens(t)
	// The whole address comes back after the sign-in, every filter of it.
	const filtered = "/jobs?state=dead&queue=reports&label=team%3Dweb"
	rec := h.must(req{path: filtered, header: map[string]string{"Accept": "text/html"}}, http.StatusSeeOther)
	loc := rec.Header().Get("Location")
	if u, err := url.Parse(loc); err != nil || u.Path != "/login" || u.Query().Get("next") != filtered {
		t.Errorf("redirect to %q", loc)
	}
	if body := h.must(req{path: loc}, http.StatusOK).Body.String(); !strings.Contains(body, `name="next" value="`+html.EscapeString(filtered)+`"`) {
		t.Errorf("the sign-in page at %q does not come back to %s", loc, filtered)
	}
	h.must(req{path: "/login"}, http.StatusOK)
	rec = h.must(req{method: "POST", path: "/login", body: url.Values{"token": {viewerToken}, "next": {"https://evil.example/"}}.Encode(),
		header: map[string]string{"Content-Type": "application/x-www-form-urlencoded"}}, http.StatusSeeOther)
	if loc := rec.Header().Get("Location"); loc != "/" {
		t.Errorf("sign-in redirected off-site to %q", loc)
	}
}

func TestFailedSignInsAreSlowedDown(t *testing.T) {
	clock := fakeclock.New(time.Unix(1e9, 0))
	th := newThrottle(clock.Now)
	if d := th.delay("1.2.3.4"); d != 0 {
		t.Fatalf("first try waits %s", d)
	}
	var last time.Duration
	for i := range 8 {
		th.failed("1.2.3.4")
		d := th.delay("1.2.3.4")
		if d <= last && d != maxDelay {
			t.Fatalf("failure %d: wait %s after %s", i+1, d, last)
		}
		last = d
	}
	if last != maxDelay || th.delay("5.6.7.8") != 0 {
		t.Errorf("wait %s; another address waits %s", last, th.delay("5.6.7.8"))
	}
	clock.Advance(forgetAfter + time.Second)
	if d := th.delay("1.2.3.4"); d != 0 {
		t.Errorf("after a quiet quarter hour the wait is %s", d)
	}
	th.failed("1.2.3.4")
	th.succeeded("1.2.3.4", roleViewer)
	if d := th.delay("1.2.3.4"); d != baseDelay {
		t.Errorf("after a viewer's sign-in the wait is %s, want %s still", d, baseDelay)
	}
	th.succeeded("1.2.3.4", roleAdmin)
	if d := th.delay("1.2.3.4"); d != 0 {
		t.Errorf("after an admin's sign-in the wait is %s", d)
	}

	// Through the handler: the second failure waits before answering.
	h := tokens(t)
	form := map[string]string{"Content-Type": "application/x-www-form-urlencoded"}
	h.must(req{method: "POST", path: "/login", body: "token=x", header: form}, http.StatusUnauthorized)
	start := time.Now()
	h.must(req{method: "POST", path: "/login", body: "token=y", header: form}, http.StatusUnauthorized)
	if took := time.Since(start); took < baseDelay {
		t.Errorf("second failed sign-in answered after %s, want at least %s", took, baseDelay)
	}
}

// Wrong bearer tokens count as failed sign-ins: the next one waits, and
// while one waits another from the same address is refused unchecked.
func TestFailedBearerTokensAreSlowedDown(t *testing.T) {
	h := tokens(t)
	h.must(req{path: "/api/v1/status", token: "guess-1"}, http.StatusUnauthorized)
	start := time.Now()
	h.must(req{path: "/api/v1/status", token: "guess-2"}, http.StatusUnauthorized)
	if took := time.Since(start); took < baseDelay {
		t.Errorf("second wrong token answered after %s, want at least %s", took, baseDelay)
	}
	// Now two failures: the next check waits 2*baseDelay. Hold it with a
	// request that has not been answered while a second one arrives.
	waiting := make(chan int)
	go func() { waiting <- h.do(req{path: "/api/v1/status", token: "guess-3"}).Code }()
	deadline := time.Now().Add(10 * time.Second)
	for !h.srv.auth.throttle.isWaiting("127.0.0.1") {
		if time.Now().After(deadline) {
			t.Fatal("the third guess never waited")
		}
		time.Sleep(time.Millisecond)
	}
	rec := h.must(req{path: "/api/v1/status", token: adminToken}, http.StatusTooManyRequests)
	if e := errCode(t, rec); e.Code != codeThrottled || rec.Header().Get("Retry-After") == "" {
		t.Errorf("parallel attempt: %+v", e)
	}
	if code := <-waiting; code != http.StatusUnauthorized {
		t.Errorf("the waiting guess: %d", code)
	}
	// Once the wait is over the right token works, and clears the wait.
	h.must(req{path: "/api/v1/status", token: adminToken}, http.StatusOK)
	if d := h.srv.auth.throttle.delay("127.0.0.1"); d != 0 {
		t.Errorf("after the admin token the wait is %s", d)
	}
	// Another address was never slowed.
	if d := h.srv.auth.throttle.delay("10.0.0.9"); d != 0 {
		t.Errorf("another address waits %s", d)
	}
}

func TestCSRF(t *testing.T) {
	h := tokens(t)
	h.enqueue(`{"id":"d","command":"false","max_retries":0}`)
	h.runJob("d", "failed", "")
	c := h.signIn(adminToken)
	_, csrf := h.page("/jobs/d", c)
	form := func(extra string) req {
		return req{method: "POST", path: "/jobs/d/retry", body: "back=/jobs/d" + extra, cookies: []*http.Cookie{c},
			header: map[string]string{"Content-Type": "application/x-www-form-urlencoded"}}
	}
	for name, r := range map[string]req{
		"no token":    form(""),
		"wrong token": form("&csrf=AAAA"),
		"other site": func() req {
			r := form("&csrf=" + csrf)
			r.header["Origin"] = "https://evil.example"
			return r
		}(),
		"cross-site fetch": func() req {
			r := form("&csrf=" + csrf)
			r.header["Sec-Fetch-Site"] = "cross-site"
			return r
		}(),
	} {
		if e := errCode(t, h.must(r, http.StatusForbidden)); e.Code != codeCSRF {
			t.Errorf("%s: %+v", name, e)
		}
	}
	if j := h.job("d"); j != "dead" {
		t.Fatalf("a refused request changed the job: %s", j)
	}
	rec := h.must(form("&csrf="+csrf), http.StatusSeeOther)
	if loc := rec.Header().Get("Location"); loc != "/jobs/d?done=retried" {
		t.Errorf("redirect to %q", loc)
	}
	if j := h.job("d"); j != "pending" {
		t.Errorf("job is %s after retry", j)
	}
	// A viewer's session may not act, CSRF token or not.
	v := h.signIn(viewerToken)
	_, vcsrf := h.page("/jobs/d", v)
	r := form("&csrf=" + vcsrf)
	r.cookies = []*http.Cookie{v}
	h.must(r, http.StatusForbidden)
	// The API with a session cookie needs the header token: a form field
	// does not count there.
	h.must(req{method: "POST", path: "/api/v1/jobs/d/cancel", body: "csrf=" + csrf, cookies: []*http.Cookie{c},
		header: map[string]string{"Content-Type": "application/x-www-form-urlencoded"}}, http.StatusForbidden)
	if j := h.job("d"); j != "pending" {
		t.Fatalf("a refused cancel changed the job: %s", j)
	}
	h.must(req{method: "DELETE", path: "/api/v1/jobs/d", cookies: []*http.Cookie{c}}, http.StatusForbidden)
	h.must(req{method: "DELETE", path: "/api/v1/jobs/d", cookies: []*http.Cookie{c}, header: map[string]string{csrfHeader: csrf}}, http.StatusOK)
}

func (h *harness) job(id string) string {
	h.t.Helper()
	j, err := h.store.GetJob(t0ctx(), id)
	if err != nil {
		h.t.Fatal(err)
	}
	return string(j.State)
}

func TestWithoutTokensOnlyLoopback(t *testing.T) {
	h := newHarness(t, openSQLite(t), "", "")
	h.must(req{path: "/api/v1/status"}, http.StatusOK)
	// curl on the same host may act without a CSRF token; a browser page may not.
	h.must(req{method: "POST", path: "/api/v1/jobs", body: `{"command":"true"}`}, http.StatusCreated)
	h.must(req{method: "POST", path: "/api/v1/jobs", body: `{"command":"true"}`, header: map[string]string{"Origin": "http://127.0.0.1:8080"}}, http.StatusForbidden)
	h.must(req{method: "POST", path: "/api/v1/jobs", body: `{"command":"true"}`, header: map[string]string{"Sec-Fetch-Site": "cross-site"}}, http.StatusForbidden)
	// A page reached through another host name (DNS rebinding) is refused.
	hr := req{path: "/api/v1/status"}
	rec := h.doHost(hr, "evil.example:8080")
	if rec.Code != http.StatusMisdirectedRequest {
		t.Errorf("foreign host name: %d", rec.Code)
	}
	if rec = h.doHost(hr, "localhost:8080"); rec.Code != http.StatusOK {
		t.Errorf("localhost: %d", rec.Code)
	}

	if _, err := Listen("0.0.0.0:0", false); !errors.Is(err, ErrNeedsToken) {
		t.Errorf("listen on every interface without a token: %v", err)
	}
	if _, err := Listen(":0", false); !errors.Is(err, ErrNeedsToken) {
		t.Errorf("listen on :0 without a token: %v", err)
	}
	ln, err := Listen("127.0.0.1:0", false)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	addr := ln.Addr().String()
	_, err = Listen(addr, false)
	if err == nil || !strings.Contains(err.Error(), addr) || !strings.Contains(err.Error(), "address already in use") ||
		strings.Count(err.Error(), addr) != 1 {
		t.Errorf("busy port: %v", err)
	}
	ln2, err := Listen("0.0.0.0:0", true)
	if err != nil {
		t.Errorf("with a token any address will do: %v", err)
	} else {
		ln2.Close()
	}
	for addr, want := range map[string]bool{"127.0.0.1:1": true, "[::1]:1": true, "localhost:1": true, "0.0.0.0:1": false, ":1": false, "10.0.0.1:1": false} {
		if IsLoopback(addr) != want {
			t.Errorf("IsLoopback(%q) = %v", addr, !want)
		}
	}
}

// isWaiting reports whether an attempt from addr waits to be checked.
func (t *throttle) isWaiting(addr string) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.fails[addr].waiting
}

// The CSRF check reads no form from an API request, so the API reads its
// JSON body whatever the Content-Type (curl -d sends a form's), while a
// browser request from another site, or without the header token, is
// refused whatever its Content-Type.
func TestAPIBodyIsJSONWhateverItsContentType(t *testing.T) {
	for _, ct := range []string{"", "application/json", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x", "text/plain"} {
		t.Run("content type "+ct, func(t *testing.T) {
			h := newHarness(t, openSQLite(t), "", "")
			header := func(extra ...string) map[string]string {
				m := map[string]string{}
				if ct != "" {
					m["Content-Type"] = ct
				}
				for i := 0; i+1 < len(extra); i += 2 {
					m[extra[i]] = extra[i+1]
				}
				return m
			}
			h.must(req{method: "POST", path: "/api/v1/jobs", body: `{"id":"curl","command":"echo hi"}`, header: header()}, http.StatusCreated)
			h.must(req{method: "PUT", path: "/api/v1/queues/q/limits", body: `{"max_running":2}`, header: header()}, http.StatusOK)

			// The page's CSRF token in a form field does not count for the API:
			// only the header does.
			csrf := h.srv.auth.csrfToken(identity{role: roleAdmin})
			for name, hd := range map[string]map[string]string{
				"other site":             header("Origin", "https://evil.example"),
				"cross-site fetch":       header("Sec-Fetch-Site", "cross-site"),
				"same site, form token":  header("Origin", "http://127.0.0.1:8080", "Sec-Fetch-Site", "same-origin"),
				"other site with header": header("Origin", "https://evil.example", csrfHeader, csrf),
			} {
				rec := h.must(req{method: "POST", path: "/api/v1/jobs", body: "csrf=" + csrf + `&{"id":"x","command":"true"}`, header: hd}, http.StatusForbidden)
				if e := errCode(t, rec); e.Code != codeCSRF {
					t.Errorf("%s: %+v", name, e)
				}
			}
			jobs, err := h.store.ListJobs(t0ctx(), queue.ListParams{Limit: 10})
			if err != nil || len(jobs) != 1 {
				t.Errorf("jobs after refused requests: %v, %v", jobs, err)
			}
			// A same-site request with the header token acts.
			h.must(req{method: "POST", path: "/api/v1/jobs", body: `{"id":"page","command":"true"}`,
				header: header("Origin", "http://127.0.0.1:8080", csrfHeader, csrf)}, http.StatusCreated)
		})
	}
}

// Signing out ends the session: its cookie, replayed, is refused, while
// another session of the same token goes on.
func TestLogoutEndsTheSession(t *testing.T) {
	h := tokens(t)
	c, other := h.signIn(adminToken), h.signIn(adminToken)
	_, csrf := h.page("/jobs", c)
	h.must(req{method: "POST", path: "/logout", body: "csrf=" + csrf, cookies: []*http.Cookie{c},
		header: map[string]string{"Content-Type": "application/x-www-form-urlencoded"}}, http.StatusSeeOther)
	h.must(req{path: "/api/v1/status", cookies: []*http.Cookie{c}}, http.StatusUnauthorized)
	h.must(req{path: "/api/v1/status", cookies: []*http.Cookie{other}}, http.StatusOK)
}

// TestBearerSchemeIsCaseInsensitive sends the scheme as clients spell it:
// HTTP's auth schemes are case-insensitive (RFC 9110, 11.1), so
// "bearer TOKEN" is the token, not a wrong one that slows the address.
func TestBearerSchemeIsCaseInsensitive(t *testing.T) {
	h := tokens(t)
	for _, tt := range []struct{ header, path string }{
		{"bearer " + viewerToken, "/api/v1/status"},
		{"BEARER " + adminToken, "/api/v1/status"},
		{"BeArEr " + viewerToken, "/metrics"},
	} {
		h.must(req{path: tt.path, header: map[string]string{"Authorization": tt.header}}, http.StatusOK)
	}
	if d := h.srv.auth.throttle.delay("127.0.0.1"); d != 0 {
		t.Errorf("after right tokens the address waits %s", d)
	}
}

// TestWrongTokenSaysSo: a request that sent a token is told the token is
// wrong, not asked to send one.
func TestWrongTokenSaysSo(t *testing.T) {
	h := tokens(t)
	e := errCode(t, h.must(req{path: "/api/v1/status", token: "wrong"}, http.StatusUnauthorized))
	if e.Code != codeUnauthorized || !strings.Contains(e.Message, "wrong token") {
		t.Errorf("wrong token: %+v", e)
	}
	e = errCode(t, h.must(req{path: "/api/v1/status"}, http.StatusUnauthorized))
	if e.Code != codeUnauthorized || strings.Contains(e.Message, "wrong") {
		t.Errorf("no token: %+v", e)
	}
}

// TestSignInTakesAPastedToken: a token pasted into the sign-in form with
// the white space around it (copied from its file, or a terminal) signs
// in, as the same token does as a bearer token or in the token file.
func TestSignInTakesAPastedToken(t *testing.T) {
	h := tokens(t)
	h.must(req{method: "POST", path: "/login", body: url.Values{"token": {" " + viewerToken + "\n"}}.Encode(),
		header: map[string]string{"Content-Type": "application/x-www-form-urlencoded"}}, http.StatusSeeOther)
	if d := h.srv.auth.throttle.delay("127.0.0.1"); d != 0 {
		t.Errorf("after the right token the address waits %s", d)
	}
}
