package web

import (
	"context"
	"fmt"
	"html"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/queuectl/queuectl/internal/view"
	"github.com/queuectl/queuectl/queue"
)

func TestHealthNeedsNoToken(t *testing.T) {
	h := tokens(t)
	h.must(req{path: "/healthz"}, http.StatusOK)
	h.must(req{path: "/readyz"}, http.StatusOK)
	h.store.Close()
	rec := h.must(req{path: "/readyz"}, http.StatusServiceUnavailable)
	if e := errCode(t, rec); e.Code != codeUnavailable {
		t.Errorf("readyz on a closed store: %+v", e)
	}
	h.must(req{path: "/healthz"}, http.StatusOK)
}

func TestEveryEndpointNeedsAToken(t *testing.T) {
	h := tokens(t)
	for _, r := range []req{
		{path: "/api/v1/status"}, {path: "/api/v1/stats"}, {path: "/api/v1/jobs"}, {path: "/api/v1/jobs/x"},
		{path: "/api/v1/jobs/x/output"}, {path: "/api/v1/jobs/x/events"}, {path: "/api/v1/queues"}, {path: "/api/v1/cron"},
		{path: "/api/v1/workers"}, {path: "/metrics"}, {method: "POST", path: "/api/v1/jobs", body: `{"command":"true"}`},
		{method: "POST", path: "/api/v1/jobs/x/retry"}, {method: "POST", path: "/api/v1/jobs/x/cancel"},
		{method: "DELETE", path: "/api/v1/jobs/x"}, {method: "POST", path: "/api/v1/dlq/retry"},
		{method: "POST", path: "/api/v1/dlq/discard"}, {method: "POST", path: "/api/v1/cron/x/trigger"},
		{path: "/api/v1/jobs", token: "wrong"},
	} {
		rec := h.must(r, http.StatusUnauthorized)
		if e := errCode(t, rec); e.Code != codeUnauthorized || rec.Header().Get("WWW-Authenticate") == "" {
			t.Errorf("%s %s: %+v", r.method, r.path, e)
		}
	}
	if n, _ := h.store.CountJobs(context.Background()); len(n) != 0 {
		t.Errorf("a refused enqueue stored jobs: %v", n)
	}
}

// TestWrongMethodIsNotAMissingEndpoint sends methods an endpoint does not
// take: 405 with the ones it does, not 404, which says the path is wrong.
func TestWrongMethodIsNotAMissingEndpoint(t *testing.T) {
	h := tokens(t)
	for _, tt := range []struct{ method, path, allow string }{
		{"PUT", "/api/v1/jobs", "GET, HEAD, POST"},
		{"PATCH", "/api/v1/jobs/x", "DELETE, GET, HEAD"},
		{"GET", "/api/v1/jobs/x/cancel", "POST"},
		{"DELETE", "/api/v1/queues/q/limits", "PUT"},
	} {
		rec := h.must(req{method: tt.method, path: tt.path, token: adminToken}, http.StatusMethodNotAllowed)
		if e := errCode(t, rec); e.Code != codeMethodNotAllowed || rec.Header().Get("Allow") != tt.allow {
			t.Errorf("%s %s: %+v, Allow %q; want %s, Allow %q", tt.method, tt.path, e, rec.Header().Get("Allow"), codeMethodNotAllowed, tt.allow)
		}
	}
	if e := errCode(t, h.must(req{method: "PUT", path: "/api/v1/nope", token: adminToken}, http.StatusNotFound)); e.Code != codeNotFound {
		t.Errorf("unknown endpoint: %+v", e)
	}
	h.must(req{method: "PUT", path: "/api/v1/jobs", token: "wrong"}, http.StatusUnauthorized)
}

// TestWrongMethodOutsideTheAPI sends methods that the health checks,
// /metrics and the pages do not take: 405 with the ones they take, as in
// the API, and no token needed to be told (the health checks need none),
// rather than 401 or a page that says the path does not exist.
func TestWrongMethodOutsideTheAPI(t *testing.T) {
	h := tokens(t)
	for _, tt := range []struct{ method, path, token, allow string }{
		{"POST", "/healthz", "", "GET, HEAD"},
		{"DELETE", "/readyz", "", "GET, HEAD"},
		{"POST", "/metrics", viewerToken, "GET, HEAD"},
		{"PUT", "/metrics", "", "GET, HEAD"},
		{"POST", "/jobs", adminToken, "GET, HEAD"},
		{"GET", "/logout", "", "POST"},
	} {
		rec := h.must(req{method: tt.method, path: tt.path, token: tt.token}, http.StatusMethodNotAllowed)
		if e := errCode(t, rec); e.Code != codeMethodNotAllowed || rec.Header().Get("Allow") != tt.allow {
			t.Errorf("%s %s: %+v, Allow %q; want %s, Allow %q", tt.method, tt.path, e, rec.Header().Get("Allow"), codeMethodNotAllowed, tt.allow)
		}
	}
	h.must(req{path: "/nope", token: viewerToken}, http.StatusNotFound)
	h.must(req{method: "POST", path: "/nope"}, http.StatusUnauthorized)
}

func TestViewerMayNotAct(t *testing.T) {
	h := tokens(t)
	j := h.enqueue(`{"id":"a","command":"true"}`)
	for _, r := range []req{
		{method: "POST", path: "/api/v1/jobs", body: `{"command":"true"}`}, {method: "POST", path: "/api/v1/jobs/a/retry"},
		{method: "POST", path: "/api/v1/jobs/a/cancel"}, {method: "DELETE", path: "/api/v1/jobs/a"},
		{method: "POST", path: "/api/v1/dlq/retry"}, {method: "POST", path: "/api/v1/dlq/discard"},
		{method: "POST", path: "/api/v1/cron/x/trigger"},
	} {
		r.token = viewerToken
		if e := errCode(t, h.must(r, http.StatusForbidden)); e.Code != codeForbidden {
			t.Errorf("%s %s: %+v", r.method, r.path, e)
		}
	}
	if got := decode[view.JobDetail](t, h.must(req{path: "/api/v1/jobs/a", token: viewerToken}, http.StatusOK)); got.State != queue.StatePending || got.ID != j.ID {
		t.Errorf("viewer reads the job: %+v", got)
	}
}

func TestEnqueueValidatesLikeTheCLI(t *testing.T) {
	for _, sk := range stores() {
		t.Run(sk.name, func(t *testing.T) {
			h := newHarness(t, sk.open(t), adminToken, viewerToken)
			tests := []struct {
				body, code, field string
			}{
				{`{"command":`, codeInvalidJob, ""},
				{`{"id":"x"}`, codeInvalidJob, "command"},
				{`{"command":"true","colour":"red"}`, codeInvalidJob, "colour"},
				{`{"command":"true","max_retries":-2}`, codeInvalidJob, "max_retries"},
				{`{"command":"true","run_at":"soon"}`, codeInvalidJob, "run_at"},
				{`{"command":"true","priority":"high"}`, codeInvalidJob, "priority"},
				{`{"command":"true","id":"bad id with spaces"}`, codeInvalidJob, "id"},
				{`{"command":"true","id":".."}`, codeInvalidJob, "id"}, // /api/v1/jobs/.. is /api/v1/
				{`{"command":"true","id":"."}`, codeInvalidJob, "id"},
				{`{"command":"true","queue":"bad queue"}`, codeInvalidJob, "queue"},
				{`{"command":"true","env":{"QUEUECTL_X":"1"}}`, codeInvalidJob, "env"},
				{`{"command":"true","dir":"relative/dir"}`, codeInvalidJob, "dir"},
				{`{"command":"true","priority":1000001}`, codeInvalidJob, "priority"},
				{`[{"command":"true"}]`, codeInvalidJob, ""},
				{`{"command":"true","after":["missing"]}`, codeInvalidJob, "after"},
				{`{"id":"named","command":"true","after":["missing"]}`, codeInvalidJob, "after"},
				{`{"command":"true","labels":{"bad key":"v"}}`, codeInvalidJob, "labels"},
			}
			for _, tt := range tests {
				rec := h.must(req{method: "POST", path: "/api/v1/jobs", body: tt.body, token: adminToken}, http.StatusBadRequest)
				if e := errCode(t, rec); e.Code != tt.code || e.Field != tt.field || e.Message == "" {
					t.Errorf("%s: %+v, want %s on %q", tt.body, e, tt.code, tt.field)
				} else if leaksGo(e.Message) || strings.Contains(e.Message, `field ""`) {
					t.Errorf("%s: message %q", tt.body, e.Message)
				}
			}
			big := `{"command":"` + strings.Repeat("x", maxBody) + `"}`
			if e := errCode(t, h.must(req{method: "POST", path: "/api/v1/jobs", body: big, token: adminToken}, http.StatusRequestEntityTooLarge)); e.Code != codeTooLarge {
				t.Errorf("big body: %+v", e)
			}
			if jobs, _ := h.store.ListJobs(context.Background(), queue.ListParams{}); len(jobs) != 0 {
				t.Fatalf("rejected jobs were stored: %v", jobs)
			}
			j := h.enqueue(`{"id":"ok","command":"echo hi","queue":"mail","priority":3,"timeout":"90s","run_at":"+1m"}`)
			if j.ID != "ok" || j.Queue != "mail" || j.Priority != 3 || *j.Timeout != 90 || !j.RunAt.Equal(h.clock.Now().Add(time.Minute)) {
				t.Errorf("enqueued: %+v", j)
			}
			rec := h.must(req{method: "POST", path: "/api/v1/jobs", body: `{"id":"ok","command":"true"}`, token: adminToken}, http.StatusConflict)
			if e := errCode(t, rec); e.Code != codeDuplicate {
				t.Errorf("duplicate id: %+v", e)
			}
		})
	}
}

func TestJobListFiltersAndPagesStably(t *testing.T) {
	for _, sk := range stores() {
		t.Run(sk.name, func(t *testing.T) {
			h := newHarness(t, sk.open(t), adminToken, viewerToken)
			for i := range 7 {
				h.enqueue(fmt.Sprintf(`{"id":"j%d","command":"echo %d","queue":"q%d","labels":{"mod":"m%d"}}`, i, i, i%2, i%3))
				h.clock.Advance(time.Millisecond)
			}
			var got []string
			path := "/api/v1/jobs?limit=3"
			for page := 0; path != ""; page++ {
				rec := h.must(req{path: path, token: viewerToken}, http.StatusOK)
				for _, j := range decode[[]queue.JobJSON](t, rec) {
					got = append(got, j.ID)
				}
				path = ""
				if link := rec.Header().Get("Link"); link != "" {
					path = link[1:strings.Index(link, ">")]
				}
				if page == 0 { // jobs added while paging go to the top
					h.enqueue(`{"id":"late","command":"true"}`)
				}
			}
			if strings.Join(got, " ") != "j6 j5 j4 j3 j2 j1 j0" {
				t.Errorf("pages: %v", got)
			}
			list := func(q string) string {
				var ids []string
				for _, j := range decode[[]queue.JobJSON](t, h.must(req{path: "/api/v1/jobs?" + q, token: viewerToken}, http.StatusOK)) {
					ids = append(ids, j.ID)
				}
				return strings.Join(ids, " ")
			}
			if got := list("queue=q1&q=echo"); got != "j5 j3 j1" {
				t.Errorf("queue and text filter: %q", got)
			}
			if got := list("q=j4"); got != "j4" {
				t.Errorf("id filter: %q", got)
			}
			if got := list("state=processing"); got != "" {
				t.Errorf("state filter: %q", got)
			}
			if got := list("label=mod%3Dm0&queue=q0"); got != "j6 j0" {
				t.Errorf("label filter: %q", got)
			}
			// More labels than a job may carry match no job; on SQLite a
			// thousand of them made a statement too deep for it (500).
			labels := func(n int) string {
				items := make([]string, n)
				for i := range items {
					items[i] = fmt.Sprintf("label=k%d%%3Dv", i)
				}
				return strings.Join(items, "&")
			}
			if got := list(labels(queue.MaxLabels)); got != "" {
				t.Errorf("%d labels: %q", queue.MaxLabels, got)
			}
			if got := list("label=mod%3Dm0&label=mod%3Dm0&queue=q0"); got != "j6 j0" {
				t.Errorf("a label given twice alike: %q", got)
			}
			if got := list("label=&queue=q0"); got != list("queue=q0") {
				t.Errorf("an empty label filter is not no filter: %q", got)
			}
			for _, q := range []string{"state=sleeping", "limit=0", "limit=501", "after=nope", "label=mod", labels(queue.MaxLabels + 1), labels(1000),
				"label=mod%3Dm0&label=mod%3Dm1", "stat=dead", "Queue=q0", "queue=q0&queue=q1", "state=dead&state=pending", "limit=1&limit=2"} {
				if e := errCode(t, h.must(req{path: "/api/v1/jobs?" + q, token: viewerToken}, http.StatusBadRequest)); e.Code != codeInvalid || e.Field == "" {
					t.Errorf("%s: %+v", q, e)
				}
			}
		})
	}
}

func TestJobDetailHidesEnvFromViewers(t *testing.T) {
	h := tokens(t)
	h.enqueue(`{"id":"e","command":"env","env":{"API_KEY":"s3cret"},"dir":"/tmp"}`)
	admin := decode[view.JobDetail](t, h.must(req{path: "/api/v1/jobs/e", token: adminToken}, http.StatusOK))
	viewer := decode[view.JobDetail](t, h.must(req{path: "/api/v1/jobs/e", token: viewerToken}, http.StatusOK))
	if admin.Env["API_KEY"] != "s3cret" || viewer.Env["API_KEY"] != hiddenValue || viewer.Dir != "/tmp" {
		t.Errorf("admin env %v, viewer env %v", admin.Env, viewer.Env)
	}
	rec := h.must(req{path: "/jobs/e", token: viewerToken, header: map[string]string{"Accept": "text/html"}}, http.StatusOK)
	if strings.Contains(rec.Body.String(), "s3cret") {
		t.Error("the job page shows an env value to a viewer")
	}
	h.must(req{path: "/api/v1/jobs/nope", token: viewerToken}, http.StatusNotFound)
}

func TestActionsOnJobs(t *testing.T) {
	for _, sk := range stores() {
		t.Run(sk.name, func(t *testing.T) {
			h := newHarness(t, sk.open(t), adminToken, viewerToken)
			act := func(method, path string, status int) *strings.Reader {
				return strings.NewReader(h.must(req{method: method, path: path, token: adminToken}, status).Body.String())
			}
			h.enqueue(`{"id":"d1","command":"false","max_retries":0,"queue":"a"}`)
			h.runJob("d1", queue.OutcomeFailed, "boom\n")
			h.enqueue(`{"id":"d2","command":"false","max_retries":0,"queue":"b"}`)
			h.runJob("d2", queue.OutcomeFailed, "")
			h.enqueue(`{"id":"d3","command":"false","max_retries":0,"queue":"b"}`)
			h.runJob("d3", queue.OutcomeFailed, "")
			h.enqueue(`{"id":"p","command":"sleep 1"}`)

			if e := errCode(t, h.must(req{method: "POST", path: "/api/v1/jobs/p/retry", token: adminToken}, http.StatusConflict)); e.Code != codeConflict {
				t.Errorf("retry a pending job: %+v", e)
			}
			h.must(req{method: "POST", path: "/api/v1/jobs/d1/retry", token: adminToken}, http.StatusOK)
			if j, _ := h.store.GetJob(context.Background(), "d1"); j.State != queue.StatePending || j.Attempts != 0 {
				t.Errorf("retried d1: %s after %d attempts", j.State, j.Attempts)
			}
			c := decode[cancelResult](t, h.must(req{method: "POST", path: "/api/v1/jobs/p/cancel", token: adminToken}, http.StatusOK))
			if c.Was != queue.StatePending || c.CancelRequested {
				t.Errorf("cancel: %+v", c)
			}
			act("DELETE", "/api/v1/jobs/p", http.StatusOK)
			h.must(req{path: "/api/v1/jobs/p", token: adminToken}, http.StatusNotFound)
			h.must(req{method: "DELETE", path: "/api/v1/jobs/p", token: adminToken}, http.StatusNotFound)

			got := decode[idsResult](t, h.must(req{method: "POST", path: "/api/v1/dlq/retry?queue=a", token: adminToken}, http.StatusOK))
			if len(got.IDs) != 0 {
				t.Errorf("retry the DLQ of queue a (d1 already retried): %v", got.IDs)
			}
			got = decode[idsResult](t, h.must(req{method: "POST", path: "/api/v1/dlq/discard?queue=b", token: adminToken}, http.StatusOK))
			if strings.Join(got.IDs, " ") != "d2 d3" {
				t.Errorf("discard the DLQ of queue b: %v", got.IDs)
			}
			h.runJob("d1", queue.OutcomeFailed, "")
			// A filter that cannot be what was meant changes nothing: a
			// dropped one would retry or discard every dead job.
			for _, bad := range []struct{ query, field string }{{"queue=", "queue"}, {"Queue=a", "Queue"}, {"queu=a", "queu"},
				{"queue=a&queue=b", "queue"}, {"queue=a%20b", "queue"}} {
				for _, action := range []string{"retry", "discard"} {
					rec := h.must(req{method: "POST", path: "/api/v1/dlq/" + action + "?" + bad.query, token: adminToken}, http.StatusBadRequest)
					if e := errCode(t, rec); e.Code != codeInvalid || e.Field != bad.field {
						t.Errorf("dlq %s ?%s: %+v, want invalid naming %s", action, bad.query, e, bad.field)
					}
				}
			}
			// Nor is a filter in the body dropped: the dashboard's form
			// posts queue=NAME, and a client copying it must not act on
			// every queue.
			for _, body := range []string{"queue=b", `{"queue":"b"}`} {
				for _, action := range []string{"retry", "discard"} {
					rec := h.must(req{method: "POST", path: "/api/v1/dlq/" + action, body: body, token: adminToken}, http.StatusBadRequest)
					if e := errCode(t, rec); e.Code != codeInvalid || e.Field != "body" {
						t.Errorf("dlq %s with body %s: %+v, want invalid naming body", action, body, e)
					}
				}
			}
			if j, _ := h.store.GetJob(context.Background(), "d1"); j.State != queue.StateDead {
				t.Errorf("a refused DLQ action changed d1: %s", j.State)
			}
			got = decode[idsResult](t, h.must(req{method: "POST", path: "/api/v1/dlq/retry", body: "{}\n", token: adminToken}, http.StatusOK))
			if strings.Join(got.IDs, " ") != "d1" {
				t.Errorf("retry the whole DLQ: %v", got.IDs)
			}
		})
	}
}

func TestOutputIsRawTextThatCannotRun(t *testing.T) {
	h := tokens(t)
	h.enqueue(`{"id":"o","command":"printf"}`)
	h.runJob("o", queue.OutcomeSucceeded, "\x1b[31mred\x1b[0m <script>alert(1)</script>\n")
	rec := h.must(req{path: "/api/v1/jobs/o/output", token: viewerToken}, http.StatusOK)
	if rec.Body.String() != "\x1b[31mred\x1b[0m <script>alert(1)</script>\n" {
		t.Errorf("raw output: %q", rec.Body.String())
	}
	if ct := rec.Header().Get("Content-Type"); ct != "text/plain; charset=utf-8" || !strings.Contains(rec.Header().Get("Content-Security-Policy"), "sandbox") {
		t.Errorf("headers: %v", rec.Header())
	}
	h.must(req{path: "/api/v1/jobs/o/output?attempt=1", token: viewerToken}, http.StatusOK)
	h.must(req{path: "/api/v1/jobs/o/output?attempt=2", token: viewerToken}, http.StatusNotFound)
	h.must(req{path: "/api/v1/jobs/o/output?attempt=x", token: viewerToken}, http.StatusBadRequest)
}

func TestEventsStreamAFinishedJob(t *testing.T) {
	h := tokens(t)
	h.enqueue(`{"id":"ev","command":"echo"}`)
	h.runJob("ev", queue.OutcomeSucceeded, "hello \x1b]0;title\x07world\n")
	rec := h.must(req{path: "/api/v1/jobs/ev/events", token: viewerToken}, http.StatusOK)
	body := rec.Body.String()
	for _, want := range []string{"event: job\n", `"state":"completed"`, "event: output\n", `"output":"hello world\n"`, "event: end\n"} {
		if !strings.Contains(body, want) {
			t.Errorf("stream lacks %q:\n%s", want, body)
		}
	}
	if rec.Header().Get("Content-Type") != "text/event-stream" {
		t.Errorf("content type %q", rec.Header().Get("Content-Type"))
	}
}

func TestStatusStatsQueuesWorkersMatchTheCLIShapes(t *testing.T) {
	h := tokens(t)
	ctx := context.Background()
	h.enqueue(`{"id":"a","command":"true","queue":"mail"}`)
	h.runJob("a", queue.OutcomeSucceeded, "")
	h.enqueue(`{"id":"b","command":"true","queue":"mail"}`)
	h.enqueue(`{"id":"c","command":"true","queue":"mail","run_at":"+24h"}`)
	h.store.ApplyQueues(ctx, []queue.QueueConfig{{Name: "mail", Concurrency: 4}})
	h.store.RegisterWorker(ctx, &queue.WorkerInfo{ID: "w1", PID: 42, Host: "box", BootID: "b", StartedAt: h.clock.Now(), HeartbeatAt: h.clock.Now()})

	st := decode[view.Status](t, h.must(req{path: "/api/v1/status", token: viewerToken}, http.StatusOK))
	counts, _ := h.store.CountJobs(ctx)
	scheduled, _ := h.store.CountScheduled(ctx, h.clock.Now())
	if want := view.NewStatus(counts, scheduled, 1); fmt.Sprint(st) != fmt.Sprint(want) || st.Jobs[view.Scheduled] != 1 || st.Jobs[queue.StatePending] != 1 {
		t.Errorf("status %v, want %v with one scheduled and one pending", st, want)
	}
	stats := decode[view.Stats](t, h.must(req{path: "/api/v1/stats?since=1h", token: viewerToken}, http.StatusOK))
	if stats.Window != "1h" || stats.Total.Attempts != 1 || len(stats.Queues) != 1 || stats.Queues[0].Queue != "mail" {
		t.Errorf("stats: %+v", stats)
	}
	h.must(req{path: "/api/v1/stats?since=forever", token: viewerToken}, http.StatusBadRequest)
	h.clock.Advance(2 * time.Hour)
	qs := decode[[]view.Queue](t, h.must(req{path: "/api/v1/queues", token: viewerToken}, http.StatusOK))
	if len(qs) != 1 || qs[0].Name != "mail" || qs[0].Concurrency != 4 || qs[0].Backlog != 1 || qs[0].Workers != 1 ||
		qs[0].OldestPendingAgeSeconds == nil || *qs[0].OldestPendingAgeSeconds < 7199 {
		t.Errorf("queues: %+v", qs)
	}
	ws := decode[[]map[string]any](t, h.must(req{path: "/api/v1/workers", token: viewerToken}, http.StatusOK))
	if len(ws) != 1 || ws[0]["host"] != "box" || ws[0]["pid"] != 42.0 {
		t.Errorf("workers: %v", ws)
	}
}

func TestCronListAndTrigger(t *testing.T) {
	for _, sk := range stores() {
		t.Run(sk.name, func(t *testing.T) {
			h := newHarness(t, sk.open(t), adminToken, viewerToken)
			ctx := context.Background()
			start := h.clock.Now().Add(-time.Hour)
			err := h.store.ApplyTemplates(ctx, []*queue.Template{
				{Name: "report", Schedule: "*/5 * * * *", TimeZone: "UTC", Command: "echo report", Overlap: queue.OverlapSkip, CatchUp: queue.CatchUpNone, Enabled: true},
			}, start)
			if err != nil {
				t.Fatal(err)
			}
			ts := decode[[]view.CronTemplate](t, h.must(req{path: "/api/v1/cron", token: viewerToken}, http.StatusOK))
			if len(ts) != 1 || ts[0].Description != "every 5 minutes" || len(ts[0].NextFires) != nextFires || ts[0].MissedSlots < 11 {
				t.Fatalf("cron: %+v", ts)
			}
			res := decode[triggerResult](t, h.must(req{method: "POST", path: "/api/v1/cron/report/trigger", token: adminToken}, http.StatusOK))
			if !res.Fired || res.JobID == "" {
				t.Fatalf("trigger: %+v", res)
			}
			if j, err := h.store.GetJob(ctx, res.JobID); err != nil || j.Template != "report" {
				t.Fatalf("triggered job: %+v %v", j, err)
			}
			// overlap = skip: the first run is still pending.
			if e := errCode(t, h.must(req{method: "POST", path: "/api/v1/cron/report/trigger", token: adminToken}, http.StatusConflict)); e.Code != codeConflict {
				t.Errorf("second trigger: %+v", e)
			}
			h.must(req{method: "POST", path: "/api/v1/cron/nope/trigger", token: adminToken}, http.StatusNotFound)
		})
	}
}

func TestUnknownAPIPathIsJSON404(t *testing.T) {
	h := tokens(t)
	if e := errCode(t, h.must(req{path: "/api/v1/nothing", token: viewerToken}, http.StatusNotFound)); e.Code != codeNotFound {
		t.Errorf("%+v", e)
	}
}

// A dead job retried by hand starts its attempt numbers over: its page and
// its event stream still show each life's own output, oldest first.
func TestOutputsOfARetriedDeadJob(t *testing.T) {
	h := tokens(t)
	h.enqueue(`{"id":"twice","command":"echo","max_retries":0}`)
	h.runJob("twice", queue.OutcomeFailed, "first life\n")
	h.must(req{method: "POST", path: "/api/v1/jobs/twice/retry", token: adminToken}, http.StatusOK)
	h.runJob("twice", queue.OutcomeFailed, "second life\n")
	events := h.must(req{path: "/api/v1/jobs/twice/events", token: viewerToken}, http.StatusOK).Body.String()
	first, second := strings.Index(events, `"output":"first life\n"`), strings.Index(events, `"output":"second life\n"`)
	if first < 0 || second < first {
		t.Errorf("event stream: want the first life's output, then the second's:\n%s", events)
	}
	page := h.must(req{path: "/jobs/twice", token: viewerToken, header: map[string]string{"Accept": "text/html"}}, http.StatusOK).Body.String()
	if !strings.Contains(page, "first life") || !strings.Contains(page, "second life") {
		t.Errorf("job page lacks a life's output:\n%s", page)
	}
	// Each output panel's raw link leads to its own life's output, and
	// its panel has an id of its own.
	var raws []string
	for _, m := range regexp.MustCompile(`href="(/api/v1/jobs/twice/output\?[^"]+)"`).FindAllStringSubmatch(page, -1) {
		raws = append(raws, h.must(req{path: html.UnescapeString(m[1]), token: viewerToken}, http.StatusOK).Body.String())
	}
	if strings.Join(raws, "") != "second life\nfirst life\n" {
		t.Errorf("the raw links of the newest and the oldest panel lead to %q", raws)
	}
	if strings.Count(page, `id="output-1"`) != 1 {
		t.Errorf("%d output panels have the id output-1", strings.Count(page, `id="output-1"`))
	}
	// The output endpoint: ?attempt=1 names the latest attempt 1, ?nth=K
	// the K-th of the history.
	for query, want := range map[string]string{"nth=1": "first life\n", "nth=2": "second life\n", "attempt=1": "second life\n"} {
		if got := h.must(req{path: "/api/v1/jobs/twice/output?" + query, token: viewerToken}, http.StatusOK).Body.String(); got != want {
			t.Errorf("output?%s: %q, want %q", query, got, want)
		}
	}
	h.must(req{path: "/api/v1/jobs/twice/output?nth=3", token: viewerToken}, http.StatusNotFound)
	for _, query := range []string{"nth=0", "nth=x", "nth=1&attempt=1", "nth=1&follow=1"} {
		if e := errCode(t, h.must(req{path: "/api/v1/jobs/twice/output?" + query, token: viewerToken}, http.StatusBadRequest)); e.Field != "nth" {
			t.Errorf("output?%s: field %q, want nth", query, e.Field)
		}
	}
}

// TestConcurrentEnqueues: requests enqueueing at once, which the server
// may store together (queue.CoalesceInserts), are answered one by one:
// each gets its own job or its own error, as if they had come in turn.
// (The conformance suite checks the grouping itself.)
func TestConcurrentEnqueues(t *testing.T) {
	for _, sk := range stores() {
		t.Run(sk.name, func(t *testing.T) {
			h := newHarness(t, sk.open(t), adminToken, viewerToken)
			const n = 40
			bodies := make([]string, n)
			for i := range n - 2 {
				bodies[i] = fmt.Sprintf(`{"id":"j%d","command":"true"}`, i)
			}
			bodies[n-2], bodies[n-1] = `{"id":"same","command":"true"}`, `{"id":"same","command":"false"}`
			codes := make([]int, n)
			var wg sync.WaitGroup
			for i, body := range bodies {
				wg.Go(func() {
					codes[i] = h.do(req{method: "POST", path: "/api/v1/jobs", body: body, token: adminToken}).Code
				})
			}
			wg.Wait()
			for i, c := range codes[:n-2] {
				if c != http.StatusCreated {
					t.Errorf("request %d: status %d", i, c)
				}
			}
			if a, b := codes[n-2], codes[n-1]; !(a == http.StatusCreated && b == http.StatusConflict || a == http.StatusConflict && b == http.StatusCreated) {
				t.Errorf("two requests for one id: statuses %d and %d, want one 201 and one 409", a, b)
			}
			jobs, err := h.store.ListJobs(context.Background(), queue.ListParams{})
			if err != nil {
				t.Fatal(err)
			}
			if len(jobs) != n-1 {
				t.Fatalf("%d jobs stored, want %d", len(jobs), n-1)
			}
		})
	}
}

// The stats window takes what its message says, 1s to 31d: under a
// second was taken, and shown as the window, though the window starts at
// a whole minute anyway.
func TestStatsWindowUnderASecondIsRefused(t *testing.T) {
	h := tokens(t)
	for _, since := range []string{"1ms", "500ms", "999999us"} {
		if e := errCode(t, h.must(req{path: "/api/v1/stats?since=" + since, token: viewerToken}, http.StatusBadRequest)); e.Field != "since" {
			t.Errorf("since=%s: %+v", since, e)
		}
	}
	h.must(req{path: "/api/v1/stats?since=1s", token: viewerToken}, http.StatusOK)
}
