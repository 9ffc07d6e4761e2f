package web

import (
	"net/http"
	"testing"

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
			jobs, err := h.store.ClaimJobs(t0ctx(), queue.ClaimParams{Worker: "w", Limit: 1, Now: h.clock.now(), LeaseUntil: h.clock.now()})
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

func TestWaitEndpoint(t *testing.T) {
	h := tokens(t)
	h.enqueue(`{"id":"a","command":"true"}`)
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
