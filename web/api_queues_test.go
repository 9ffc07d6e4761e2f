package web

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/queuectl/queuectl/internal/view"
	"github.com/queuectl/queuectl/queue"
)

func TestQueueActions(t *testing.T) {
	for _, sk := range stores() {
		t.Run(sk.name, func(t *testing.T) {
			h := newHarness(t, sk.open(t), adminToken, viewerToken)
			h.enqueue(`{"id":"a","command":"true","queue":"q"}`)
			pause := req{method: "POST", path: "/api/v1/queues/q/pause"}

			// A viewer may not act; a browser session needs the CSRF token.
			pause.token = viewerToken
			if e := errCode(t, h.must(pause, http.StatusForbidden)); e.Code != codeForbidden {
				t.Errorf("viewer pause: %+v", e)
			}
			c := h.signIn(adminToken)
			if e := errCode(t, h.must(req{method: "POST", path: "/api/v1/queues/q/pause", cookies: []*http.Cookie{c}},
				http.StatusForbidden)); e.Code != codeCSRF {
				t.Errorf("pause without CSRF token: %+v", e)
			}
			if st := decode[view.Status](t, h.must(req{path: "/api/v1/status", token: viewerToken}, http.StatusOK)); len(st.Paused) != 0 {
				t.Fatalf("a refused pause paused: %v", st.Paused)
			}

			pause.token = adminToken
			if q := decode[view.Queue](t, h.must(pause, http.StatusOK)); !q.Paused || q.Jobs[queue.StatePending] != 1 {
				t.Errorf("pause answered %+v", q)
			}
			jobs, err := h.store.ClaimJobs(t0ctx(), queue.ClaimParams{Worker: "w", Limit: 1, Now: h.clock.Now(), LeaseUntil: h.clock.Now()})
			if err != nil || len(jobs) != 0 {
				t.Fatalf("claim of a paused queue: %v, %v", jobs, err)
			}
			if st := decode[view.Status](t, h.must(req{path: "/api/v1/status", token: viewerToken}, http.StatusOK)); len(st.Paused) != 1 || st.Paused[0] != "q" {
				t.Errorf("status paused_queues = %v", st.Paused)
			}

			limits := req{method: "PUT", path: "/api/v1/queues/q/limits", token: adminToken}
			limits.body = `{"rate_limit":"fast"}`
			if e := errCode(t, h.must(limits, http.StatusBadRequest)); e.Field != "rate_limit" {
				t.Errorf("bad rate limit: %+v", e)
			}
			limits.body = `{"max_running":3,"rate_limit":"10/s"}`
			q := decode[view.Queue](t, h.must(limits, http.StatusOK))
			if q.MaxRunning != 3 || q.RateLimit == nil || *q.RateLimit != "10/s" || !q.Paused {
				t.Errorf("limits answered %+v", q)
			}
			if q := decode[view.Queue](t, h.must(req{method: "POST", path: "/api/v1/queues/q/resume", token: adminToken}, http.StatusOK)); q.Paused || q.MaxRunning != 3 {
				t.Errorf("resume answered %+v", q)
			}
		})
	}
}

// TestQueueKnownOnlyByItsControl acts on a queue that holds no job: it is
// listed while a control (pause, limits) names it, with what any queue
// shows, and an action that lifts its last control still answers it.
func TestQueueKnownOnlyByItsControl(t *testing.T) {
	for _, sk := range stores() {
		t.Run(sk.name, func(t *testing.T) {
			h := newHarness(t, sk.open(t), adminToken, viewerToken)
			h.enqueue(`{"id":"a","command":"true","queue":"busy"}`)
			if err := h.store.RegisterWorker(t0ctx(), &queue.WorkerInfo{ID: "w", PID: 7, Host: "box", BootID: "b",
				StartedAt: h.clock.Now(), HeartbeatAt: h.clock.Now()}); err != nil { // serves every queue
				t.Fatal(err)
			}
			act := func(method, path, body string) view.Queue {
				t.Helper()
				return decode[view.Queue](t, h.must(req{method: method, path: path, body: body, token: adminToken}, http.StatusOK))
			}
			busy := act("POST", "/api/v1/queues/busy/pause", "")
			idle := act("POST", "/api/v1/queues/idle/pause", "")
			if !idle.Paused || idle.Workers != busy.Workers || len(idle.Jobs) != len(busy.Jobs) {
				t.Errorf("paused idle queue = %+v; want paused, as the paused busy one %+v shows it", idle, busy)
			}
			if _, ok := idle.Jobs[view.Scheduled]; !ok {
				t.Errorf("idle queue's jobs %v: no %s count", idle.Jobs, view.Scheduled)
			}
			if q := act("POST", "/api/v1/queues/idle/resume", ""); q.Name != "idle" || q.Paused {
				t.Errorf("resume of the idle queue answered %+v", q)
			}
			act("PUT", "/api/v1/queues/idle/limits", `{"max_running":2}`)
			if q := act("PUT", "/api/v1/queues/idle/limits", `{"max_running":0}`); q.Name != "idle" || q.MaxRunning != 0 {
				t.Errorf("limits lifted from the idle queue answered %+v", q)
			}
		})
	}
}

func TestWaitEndpoint(t *testing.T) {
	h := tokens(t)
	h.enqueue(`{"id":"a","command":"true"}`)
	// HEAD has no body to wait for: it answers at once.
	if rec, ended := serveWithin(h, "HEAD", "/api/v1/jobs/a/wait", 5*time.Second); !ended || rec.Code != http.StatusOK {
		t.Errorf("HEAD of a wait on a pending job: ended %v, %d", ended, rec.Code)
	}
	got := decode[waitResult](t, h.must(req{path: "/api/v1/jobs/a/wait?timeout=50ms", token: viewerToken}, http.StatusOK))
	if got.Final || got.Job == nil || got.Job.State != queue.StatePending {
		t.Errorf("wait on a pending job = %+v; want not final", got)
	}
	h.runJob("a", queue.OutcomeSucceeded, "")
	got = decode[waitResult](t, h.must(req{path: "/api/v1/jobs/a/wait", token: viewerToken}, http.StatusOK))
	if !got.Final || got.Job.State != queue.StateCompleted {
		t.Errorf("wait on a completed job = %+v", got)
	}
	if e := errCode(t, h.must(req{path: "/api/v1/jobs/nope/wait", token: viewerToken}, http.StatusNotFound)); e.Code != codeNotFound {
		t.Errorf("wait on an unknown job: %+v", e)
	}
	if e := errCode(t, h.must(req{path: "/api/v1/jobs/a/wait?timeout=1h", token: viewerToken}, http.StatusBadRequest)); e.Field != "timeout" {
		t.Errorf("wait with a long timeout: %+v", e)
	}
}

// PUT …/limits takes what docs/http.md says: a number or a numeric string
// for max_running, a rate or 0 for rate_limit, 0 or "0" removing a limit.
// A bad body answers 400 invalid naming the field, in one line without Go's
// decoding errors, and changes nothing.
func TestQueueLimitsBody(t *testing.T) {
	h := tokens(t)
	put := func(path, body string, status int) *httptest.ResponseRecorder {
		t.Helper()
		return h.must(req{method: "PUT", path: path, body: body, token: adminToken}, status)
	}
	rate := func(q view.Queue) string {
		if q.RateLimit == nil {
			return ""
		}
		return *q.RateLimit
	}
	for _, tt := range []struct {
		name, body string
		running    int
		rate       string
	}{
		{"numeric strings", `{"max_running":"3","rate_limit":"10/s"}`, 3, "10/s"},
		{"max_running \"0\" removes only it", `{"max_running":"0"}`, 0, "10/s"},
		{"rate_limit 0 removes it", `{"max_running":2,"rate_limit":0}`, 2, ""},
		{"null keeps a limit", `{"max_running":null,"rate_limit":"5/m"}`, 2, "5/m"},
	} {
		q := decode[view.Queue](t, put("/api/v1/queues/q/limits", tt.body, http.StatusOK))
		if q.MaxRunning != tt.running || rate(q) != tt.rate {
			t.Errorf("%s: max_running %d, rate_limit %q; want %d, %q", tt.name, q.MaxRunning, rate(q), tt.running, tt.rate)
		}
	}

	for _, tt := range []struct {
		name, path, body, field, says string
	}{
		{"max_running as a word", "", `{"max_running":"many"}`, "max_running", `max_running "many"`},
		{"negative max_running", "", `{"max_running":-1}`, "max_running", "max_running -1"},
		{"max_running over the cap", "", `{"max_running":1000001}`, "max_running", "1000000"},
		{"fractional max_running", "", `{"max_running":1.5}`, "max_running", "whole number"},
		{"max_running as an object", "", "{\"max_running\":{\n\"n\": 1\n}}", "max_running", `{"n":1}`},
		{"rate_limit as a number", "", `{"rate_limit":10}`, "rate_limit", `"10"`},
		{"rate_limit as a word", "", `{"rate_limit":"fast"}`, "rate_limit", "COUNT/PERIOD"},
		{"unknown field", "", `{"bogus":1}`, "bogus", `unknown field "bogus"`},
		{"no field", "", `{}`, "", "give max_running or rate_limit"},
		{"no body", "", ``, "", "give max_running or rate_limit"},
		{"not an object", "", `[1]`, "", "must be an object"},
		{"cut short", "", `{"max_running":`, "", "invalid limits JSON"},
		{"two objects", "", `{"max_running":1} {}`, "", "trailing data"},
		{"a closing bracket after the object", "", `{"max_running":1}]`, "", "trailing data"},
		{"a field's name in capitals", "", `{"MAX_RUNNING":1}`, "MAX_RUNNING", `unknown field "MAX_RUNNING" (field names are lower case: "max_running")`},
		{"a field given twice", "", `{"max_running":1,"max_running":100}`, "max_running", `field "max_running" is given twice`},
		{"bad queue name", "/api/v1/queues/a%20b/limits", `{"max_running":1}`, "name", "white space"},
	} {
		path := tt.path
		if path == "" {
			path = "/api/v1/queues/q/limits"
		}
		e := errCode(t, put(path, tt.body, http.StatusBadRequest))
		if e.Code != codeInvalid || e.Field != tt.field || !strings.Contains(e.Message, tt.says) ||
			strings.ContainsAny(e.Message, "\n\r") || leaksGo(e.Message) {
			t.Errorf("%s: %+v; want %s on %q saying %q", tt.name, e, codeInvalid, tt.field, tt.says)
		}
	}
	qs := decode[[]view.Queue](t, h.must(req{path: "/api/v1/queues", token: viewerToken}, http.StatusOK))
	if len(qs) != 1 || qs[0].MaxRunning != 2 || rate(qs[0]) != "5/m" {
		t.Errorf("refused requests changed the limits: %+v", qs)
	}
}

// leaksGo reports whether an error message shows Go's decoding errors or
// internal wrapping instead of words for the API's users.
func leaksGo(msg string) bool {
	for _, s := range []string{"json:", "unmarshal", "Go struct", "Go value", "limitsRequest", "JobSpec", "update queue controls"} {
		if strings.Contains(msg, s) {
			return true
		}
	}
	return false
}

// The wait's timeout takes what its message says, 1ms to 10s.
func TestWaitTimeoutUnderAMillisecondIsRefused(t *testing.T) {
	h := tokens(t)
	h.enqueue(`{"id": "a", "command": "true"}`)
	for _, timeout := range []string{"1ns", "999us"} {
		if e := errCode(t, h.must(req{path: "/api/v1/jobs/a/wait?timeout=" + timeout, token: viewerToken}, http.StatusBadRequest)); e.Field != "timeout" {
			t.Errorf("timeout=%s: %+v", timeout, e)
		}
	}
}
