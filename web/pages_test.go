package web

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"html"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/queuectl/queuectl/queue"
)

func TestEveryPageRendersForAViewer(t *testing.T) {
	h := tokens(t)
	ctx := context.Background()
	h.enqueue(`{"id":"d","command":"false","max_retries":0}`)
	h.runJob("d", queue.OutcomeFailed, "oops\n")
	h.store.ApplyTemplates(ctx, []*queue.Template{{Name: "nightly", Schedule: "0 3 * * *", TimeZone: "Europe/Berlin",
		Command: "backup", Overlap: queue.OverlapSkip, CatchUp: queue.CatchUpNone, Enabled: true}}, h.clock.Now())
	h.store.RegisterWorker(ctx, &queue.WorkerInfo{ID: "w", PID: 7, Host: "box", BootID: "b", StartedAt: h.clock.Now(), HeartbeatAt: h.clock.Now()})
	h.store.RegisterWorker(ctx, &queue.WorkerInfo{ID: "s", PID: 8, Host: "box", BootID: "b", Service: true, StartedAt: h.clock.Now(), HeartbeatAt: h.clock.Now()})
	c := h.signIn(viewerToken)
	if body, _ := h.page("/workers", c); !strings.Contains(body, "<td>service</td>") || !strings.Contains(body, "<td>worker</td>") {
		t.Errorf("/workers does not tell the service from the worker")
	}
	for path, want := range map[string]string{
		"/": "Throughput", "/?range=24h": "Last 24 hours", "/jobs": "d", "/jobs?state=dead&q=d": "false",
		"/jobs/d": "oops", "/dlq": "1 dead job(s)", "/cron": "every day at 03:00", "/workers": "box",
		// Without script the dead-letter queue filter still has a button.
		"/dlq?queue=default": `<noscript><button class="btn small" type="submit">Filter</button></noscript>`,
	} {
		body, _ := h.page(path, c)
		if !strings.Contains(body, want) {
			t.Errorf("%s lacks %q", path, want)
		}
		if strings.Contains(body, `action="/dlq/retry"`) || strings.Contains(body, `/retry"><input`) {
			t.Errorf("%s shows admin actions to a viewer", path)
		}
	}
	rec := h.must(req{path: "/nope", cookies: []*http.Cookie{c}, header: map[string]string{"Accept": "text/html"}}, http.StatusNotFound)
	if !strings.Contains(rec.Body.String(), "no such page") || !strings.Contains(rec.Body.String(), `<nav>`) ||
		strings.Contains(rec.Body.String(), `class="active"`) {
		t.Errorf("404 page, signed in: want the message and the navigation, no entry active: %s", rec.Body.String())
	}
	// A page the role may not open says so, navigation kept.
	rec = h.must(req{path: "/enqueue", cookies: []*http.Cookie{c}, header: map[string]string{"Accept": "text/html"}}, http.StatusForbidden)
	if !strings.Contains(rec.Body.String(), "may not do this") || !strings.Contains(rec.Body.String(), `<nav>`) {
		t.Errorf("403 page, signed in as a viewer: want the message and the navigation: %s", rec.Body.String())
	}
	rec = h.must(req{path: "/static/app.css"}, http.StatusOK)
	if !strings.HasPrefix(rec.Header().Get("Content-Type"), "text/css") {
		t.Errorf("css type %q", rec.Header().Get("Content-Type"))
	}
}

func TestPagesEscapeJobFields(t *testing.T) {
	h := newHarness(t, openSQLite(t), "", "")
	cmd := `echo "<script>alert(1)</script>"`
	h.must(req{method: "POST", path: "/api/v1/jobs", body: `{"id":"x","command":` + jsonString(cmd) + `,"max_retries":0}`}, http.StatusCreated)
	h.runJob("x", queue.OutcomeFailed, "\x1b[1;31mERROR\x1b[0m <b>bold</b>\r\n\x1b]0;pwned\x07done\x00\n")
	h.must(req{method: "POST", path: "/api/v1/jobs", body: `{"id":"y<img/src=1>","command":"true"}`}, http.StatusCreated)
	for _, path := range []string{"/jobs/x", "/jobs", "/dlq", "/jobs/y%3Cimg%2Fsrc=1%3E"} {
		rec := h.must(req{path: path, header: map[string]string{"Accept": "text/html"}}, http.StatusOK)
		body := rec.Body.String()
		if strings.Contains(body, "<script>alert") || strings.Contains(body, "<b>bold") || strings.ContainsRune(body, 0x1b) ||
			strings.Contains(body, "<img/src=1>") {
			t.Errorf("%s shows job fields unescaped", path)
		}
		if csp := rec.Header().Get("Content-Security-Policy"); !strings.Contains(csp, "script-src 'self'") {
			t.Errorf("%s CSP %q", path, csp)
		}
	}
	// Control characters and bidirectional overrides in a command show.
	sneaky := "echo safe\x1b[8m; rm -rf /tmp/x\u202e#"
	quoted, _ := json.Marshal(sneaky)
	h.must(req{method: "POST", path: "/api/v1/jobs", body: `{"id":"z","command":` + string(quoted) + `}`}, http.StatusCreated)
	for _, path := range []string{"/jobs/z", "/jobs"} {
		page := h.must(req{path: path, header: map[string]string{"Accept": "text/html"}}, http.StatusOK).Body.String()
		if strings.ContainsRune(page, 0x1b) || strings.ContainsRune(page, 0x202e) || !strings.Contains(page, "safe\u241b[8m; rm -rf /tmp/x⟨U&#43;202E⟩#") {
			t.Errorf("%s hides control characters of a command", path)
		}
	}
	body := h.must(req{path: "/jobs/x", header: map[string]string{"Accept": "text/html"}}, http.StatusOK).Body.String()
	if !strings.Contains(body, "ERROR &lt;b&gt;bold&lt;/b&gt;\ndone\u2400\n") {
		t.Errorf("output not cleaned: %s", body[strings.Index(body, `<pre class="output"`):])
	}
}

func jsonString(s string) string {
	return `"` + strings.ReplaceAll(strings.ReplaceAll(s, `\`, `\\`), `"`, `\"`) + `"`
}

func TestCleanOutput(t *testing.T) {
	for in, want := range map[string]string{
		"plain\n":                     "plain\n",
		"\x1b[31mred\x1b[0m":          "red",
		"a\x1b]8;;http://x\x1b\\link": "alink",
		"50%\r100%\r\n":               "50%\n100%\n",
		"bell\x07 del\x7f":            "bell\u2407 del\u2421",
		"bad \xff utf8":               "bad \ufffd utf8",
		"\x1b(Bcharset \x9b2Jcsi":     "charset csi",
		"tab\tkept":                   "tab\tkept",
		"c1 \u0085 control":           "c1 \ufffd control",
		"unterminated \x1b[31":        "unterminated ",
		"title \x1b]0;x":              "title ",
		"bidi \u202eevil\u202c end":   "bidi ⟨U+202E⟩evil⟨U+202C⟩ end",
	} {
		if got := cleanOutput([]byte(in)); got != want {
			t.Errorf("cleanOutput(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestChartsRenderSVG(t *testing.T) {
	now := time.Date(2026, 5, 1, 12, 30, 0, 0, time.UTC)
	rg := chartRanges[0]
	start := chartRunTimes(rg, now).Since
	var runs []queue.RunTimeCount
	for i := range 40 {
		o := queue.OutcomeSucceeded
		if i%4 == 0 {
			o = queue.OutcomeFailed
		}
		d := int64(i) * 100_000 // µs
		end := now.Add(-time.Duration(i) * time.Minute)
		runs = append(runs, queue.RunTimeCount{Queue: "q", Slot: start.Add(end.Sub(start).Truncate(rg.Bucket)), Class: o,
			LE: queue.RunTimeBucket(d), N: 1, Min: d, Max: d})
	}
	b := bucketize(runs, rg, now)
	if len(b) != 12 {
		t.Fatalf("%d buckets", len(b))
	}
	total := 0
	for _, x := range b {
		total += x.Succeeded + x.Failed
	}
	if total != 40 {
		t.Errorf("bucketed %d of 40 attempts", total)
	}
	for _, svg := range []string{string(throughputChart(b, chartRanges[0])), string(failureChart(b, chartRanges[0])), string(runTimeChart(b, chartRanges[0]))} {
		if !strings.HasPrefix(svg, "<svg") || !strings.HasSuffix(svg, "</svg>") || strings.Contains(svg, "NaN") {
			t.Errorf("chart: %.200s", svg)
		}
	}
	// Time labels are round times, evenly spaced, wherever the window
	// starts: every 10 minutes of the hour, every 4 hours of the day.
	times := regexp.MustCompile(`text-anchor="middle">(\d\d:\d\d)<`)
	for _, tc := range []struct {
		rg   chartRange
		now  time.Time
		want string
	}{
		{chartRanges[0], time.Date(2026, 5, 1, 12, 33, 0, 0, time.UTC), "11:40 11:50 12:00 12:10 12:20 12:30"},
		{chartRanges[1], time.Date(2026, 5, 1, 13, 20, 0, 0, time.UTC), "16:00 20:00 00:00 04:00 08:00 12:00"},
	} {
		var got []string
		for _, m := range times.FindAllStringSubmatch(string(throughputChart(bucketize(nil, tc.rg, tc.now), tc.rg)), -1) {
			got = append(got, m[1])
		}
		if strings.Join(got, " ") != tc.want {
			t.Errorf("%s at %s: time labels %v, want %s", tc.rg.Key, tc.now.Format("15:04"), got, tc.want)
		}
	}
}

// A viewer's session, with its own valid CSRF token, may take no action
// from the pages, and none changes anything.
func TestViewerMayNotActFromPages(t *testing.T) {
	h := tokens(t)
	ctx := context.Background()
	h.enqueue(`{"id":"d","command":"false","max_retries":0}`)
	h.runJob("d", queue.OutcomeFailed, "")
	h.enqueue(`{"id":"p","command":"true"}`)
	h.store.ApplyTemplates(ctx, []*queue.Template{{Name: "nightly", Schedule: "0 3 * * *", TimeZone: "UTC",
		Command: "backup", Overlap: queue.OverlapSkip, CatchUp: queue.CatchUpNone, Enabled: true}}, h.clock.Now())
	c := h.signIn(viewerToken)
	_, csrf := h.page("/dlq", c)
	for _, path := range []string{"/jobs/d/retry", "/jobs/d/discard", "/jobs/p/cancel", "/dlq/retry", "/dlq/discard", "/cron/nightly/trigger",
		"/queues/default/pause", "/queues/default/resume", "/queues/default/limits"} {
		rec := h.must(req{method: "POST", path: path, body: "csrf=" + csrf + "&back=/dlq", cookies: []*http.Cookie{c},
			header: map[string]string{"Content-Type": "application/x-www-form-urlencoded"}}, http.StatusForbidden)
		if e := errCode(t, rec); e.Code != codeForbidden {
			t.Errorf("%s: %+v", path, e)
		}
	}
	if h.job("d") != "dead" || h.job("p") != "pending" {
		t.Errorf("a viewer changed jobs: d %s, p %s", h.job("d"), h.job("p"))
	}
	if n, _ := h.store.ListJobs(ctx, queue.ListParams{Limit: 10}); len(n) != 2 {
		t.Errorf("a viewer's trigger added a job: %d jobs", len(n))
	}
}

// A cron trigger from the dashboard says so and links the job it added.
func TestTriggerFromPageLinksTheJob(t *testing.T) {
	h := tokens(t)
	ctx := context.Background()
	if err := h.store.ApplyTemplates(ctx, []*queue.Template{{Name: "nightly", Schedule: "0 3 * * *", TimeZone: "UTC",
		Command: "backup", Overlap: queue.OverlapSkip, CatchUp: queue.CatchUpNone, Enabled: true}}, h.clock.Now()); err != nil {
		t.Fatal(err)
	}
	c := h.signIn(adminToken)
	_, csrf := h.page("/cron", c)
	rec := h.must(req{method: "POST", path: "/cron/nightly/trigger", body: "csrf=" + csrf + "&back=/cron", cookies: []*http.Cookie{c},
		header: map[string]string{"Content-Type": "application/x-www-form-urlencoded"}}, http.StatusSeeOther)
	jobs, err := h.store.ListJobs(ctx, queue.ListParams{Limit: 10})
	if err != nil || len(jobs) != 1 {
		t.Fatalf("jobs after the trigger: %v, %v", jobs, err)
	}
	id := jobs[0].ID
	body, _ := h.page(rec.Header().Get("Location"), c)
	if want := `Recurring job triggered. <a href="/jobs/` + id + `">Job ` + id + `</a>`; !strings.Contains(body, want) {
		t.Errorf("the page after the trigger (%s) does not hold %q", rec.Header().Get("Location"), want)
	}
	if want := `"action":"trigger","target":"nightly"`; !strings.Contains(h.logs.String(), want) {
		t.Errorf("no audit line for the trigger (%s):\n%s", want, h.logs.String())
	}
	if body, _ := h.page("/cron?done=enqueued&job="+id, c); strings.Contains(body, `">Job `+id+`</a></div>`) {
		t.Error("another action's message links a job named in the query")
	}
}

// Admins pause and resume a queue from the queues table; the table shows
// the pause and the limits.
func TestPauseAndResumeFromPages(t *testing.T) {
	h := tokens(t)
	ctx := context.Background()
	h.enqueue(`{"id":"p","command":"true","queue":"mail"}`)
	if err := h.store.UpdateQueueControls(ctx, queue.ControlUpdate{Names: []string{"mail"}, MaxRunning: ptr(3)}); err != nil {
		t.Fatal(err)
	}
	c := h.signIn(adminToken)
	body, csrf := h.page("/workers", c)
	if !strings.Contains(body, `id="pause-mail"`) || !strings.Contains(body, "3 running at most") || strings.Contains(body, ">paused<") {
		t.Fatalf("the queues table of a running queue:\n%s", body)
	}
	act := func(path string) {
		t.Helper()
		h.must(req{method: "POST", path: path, body: "csrf=" + csrf + "&back=/workers", cookies: []*http.Cookie{c},
			header: map[string]string{"Content-Type": "application/x-www-form-urlencoded"}}, http.StatusSeeOther)
	}
	paused := func() bool { return storedControl(t, h.store, "mail").Paused }
	act("/queues/mail/pause")
	if !paused() {
		t.Fatal("the pause button did not pause the queue")
	}
	for _, path := range []string{"/workers", "/"} {
		body, _ := h.page(path, c)
		if !strings.Contains(body, ">paused<") || !strings.Contains(body, `id="resume-mail"`) {
			t.Errorf("%s does not show the paused queue", path)
		}
	}
	act("/queues/mail/resume")
	if paused() {
		t.Fatal("the resume button did not resume the queue")
	}
	v := h.signIn(viewerToken)
	if body, _ := h.page("/workers", v); strings.Contains(body, `id="pause-mail"`) || strings.Contains(body, `id="limits-mail"`) {
		t.Error("a viewer is offered the pause button or the limits form")
	}
}

// Admins set and clear a queue's limits from the queues table; bad values
// are refused naming the field, and change nothing.
func TestQueueLimitsFromPages(t *testing.T) {
	h := tokens(t)
	h.enqueue(`{"id":"p","command":"true","queue":"mail"}`)
	c := h.signIn(adminToken)
	body, csrf := h.page("/workers", c)
	if !strings.Contains(body, `id="limits-mail"`) || !strings.Contains(body, `action="/queues/mail/limits"`) {
		t.Fatalf("no limits form for the queue:\n%s", body)
	}
	set := func(maxRunning, rate string, status int) *httptest.ResponseRecorder {
		t.Helper()
		return h.must(req{method: "POST", path: "/queues/mail/limits", cookies: []*http.Cookie{c},
			body:   url.Values{"csrf": {csrf}, "back": {"/workers"}, "max_running": {maxRunning}, "rate_limit": {rate}}.Encode(),
			header: map[string]string{"Content-Type": "application/x-www-form-urlencoded"}}, status)
	}
	control := func() queue.QueueControl { return storedControl(t, h.store, "mail") }
	if loc := set("3", "10/m", http.StatusSeeOther).Header().Get("Location"); loc != "/workers?done=queue_limits" {
		t.Errorf("after setting limits: to %q", loc)
	}
	if c := control(); c.MaxRunning != 3 || c.Rate != (queue.RateLimit{N: 10, Per: time.Minute}) {
		t.Fatalf("stored limits: %+v", c)
	}
	if want := `"max_running":3,"rate_limit":"10/m","action":"limits","target":"mail"`; !strings.Contains(h.logs.String(), want) {
		t.Errorf("the audit line does not carry the limits set (%s):\n%s", want, h.logs.String())
	}
	if body, _ := h.page("/workers", c); !strings.Contains(body, "3 running at most") || !strings.Contains(body, `aria-label="Rate of queue mail" value="10/m"`) {
		t.Errorf("the table does not show the limits set")
	}
	for _, bad := range [][2]string{{"-1", ""}, {"many", ""}, {"", "fast"}, {"1000001", ""}} {
		field := "max_running"
		if bad[1] != "" {
			field = "rate_limit"
		}
		if e := errCode(t, set(bad[0], bad[1], http.StatusBadRequest)); e.Field != field {
			t.Errorf("max running %q, rate %q: the error names field %q, want %s", bad[0], bad[1], e.Field, field)
		}
	}
	// A queue name no queue can have is refused naming it, as the API does.
	rec := h.must(req{method: "POST", path: "/queues/a%20b/pause", cookies: []*http.Cookie{c}, body: url.Values{"csrf": {csrf}}.Encode(),
		header: map[string]string{"Content-Type": "application/x-www-form-urlencoded"}}, http.StatusBadRequest)
	if e := errCode(t, rec); e.Field != "name" {
		t.Errorf("pause of a bad queue name: %+v", e)
	}
	if c := control(); c.MaxRunning != 3 || c.Rate.N != 10 {
		t.Fatalf("a refused form changed the limits: %+v", c)
	}
	set("", "", http.StatusSeeOther) // empty fields: no limits
	if c := control(); c.Limited() {
		t.Fatalf("cleared limits: %+v", c)
	}
}

// queueRow returns the cells of queue name's row in a page's queue table
// that follow the cell holding the name.
func queueRow(t *testing.T, body, name string) []string {
	t.Helper()
	start := strings.Index(body, `<a href="/jobs?queue=`+name+`"`)
	if start < 0 {
		t.Fatalf("no row for queue %s in:\n%s", name, body)
	}
	row := body[start:]
	row = row[:strings.Index(row, "</tr>")]
	var cells []string
	for _, m := range regexp.MustCompile(`<td[^>]*>(.*?)</td>`).FindAllStringSubmatch(row, -1) {
		cells = append(cells, strings.TrimSpace(regexp.MustCompile(`<[^>]+>`).ReplaceAllString(m[1], "")))
	}
	return cells
}

func TestQueueTableShowsScheduledJobs(t *testing.T) {
	h := tokens(t)
	h.enqueue(`{"id":"now","command":"true","queue":"later"}`)
	h.enqueue(`{"id":"soon","command":"true","queue":"later","run_at":"+1h"}`)
	h.enqueue(`{"id":"sooner","command":"true","queue":"later","run_at":"+5m"}`)
	c := h.signIn(viewerToken)
	for _, path := range []string{"/", "/workers"} {
		body, _ := h.page(path, c)
		if !strings.Contains(body, ">Scheduled</th>") {
			t.Fatalf("%s: the queue table has no Scheduled column", path)
		}
		// The cells after the name's: pending (due), scheduled, running.
		if cells := queueRow(t, body, "later"); len(cells) < 3 || cells[0] != "1" || cells[1] != "2" || cells[2] != "0" {
			t.Errorf("%s: queue later's row %q, want 1 pending, 2 scheduled, 0 running", path, cells)
		}
	}
}

// Ids and queue names may hold "/", "?", "#" and "%": every link and form
// escapes them, so they lead to the job or the queue and not elsewhere.
func TestLinksEscapeIdsAndNames(t *testing.T) {
	h := tokens(t)
	ctx := context.Background()
	const id, q = "weird/id?x=1#frag%20", "team/a?b"
	h.enqueue(`{"id":"weird/id?x=1#frag%20","command":"true","queue":"team/a?b"}`)
	c := h.signIn(adminToken)
	const jobPath, queuePath = "/jobs/weird%2Fid%3Fx=1%23frag%2520", "/queues/team%2Fa%3Fb/pause"
	if body, _ := h.page("/jobs", c); !strings.Contains(body, `href="`+jobPath+`"`) {
		t.Fatalf("/jobs does not link the job at %s", jobPath)
	}
	body, csrf := h.page(jobPath, c)
	if !strings.Contains(body, `action="`+jobPath+`/discard"`) {
		t.Fatalf("the job's page does not post its discard to %s/discard", jobPath)
	}
	if body, _ := h.page("/workers", c); !strings.Contains(body, `action="`+queuePath+`"`) {
		t.Fatalf("/workers does not post the pause of %q to %s", q, queuePath)
	}
	h.must(req{method: "POST", path: queuePath, body: "csrf=" + csrf + "&back=/workers", cookies: []*http.Cookie{c},
		header: map[string]string{"Content-Type": "application/x-www-form-urlencoded"}}, http.StatusSeeOther)
	if cs, err := h.store.QueueControls(ctx); err != nil || len(cs) != 1 || cs[0].Name != q || !cs[0].Paused {
		t.Fatalf("after the pause form: %+v %v", cs, err)
	}
	h.must(req{method: "POST", path: jobPath + "/discard", body: "csrf=" + csrf + "&back=/jobs", cookies: []*http.Cookie{c},
		header: map[string]string{"Content-Type": "application/x-www-form-urlencoded"}}, http.StatusSeeOther)
	if _, err := h.store.GetJob(ctx, id); !errors.Is(err, queue.ErrNotFound) {
		t.Fatalf("after the discard form the job is still there: %v", err)
	}
}

// A job's page shows what it waits on, its labels and unique key, and a
// waiting job can be cancelled from it.
func TestJobPageShowsDependenciesAndLabels(t *testing.T) {
	h := tokens(t)
	h.enqueue(`{"id":"first","command":"sleep 1"}`)
	h.enqueue(`{"id":"second","command":"true","after":["first"],"labels":{"team":"data"},"unique_key":"nightly"}`)
	c := h.signIn(adminToken)
	body, _ := h.page("/jobs/second", c)
	for _, want := range []string{">waiting<", "Runs after", `href="/jobs/first"`, "team=data", "nightly", `id="cancel"`} {
		if !strings.Contains(body, want) {
			t.Errorf("the waiting job's page lacks %q", want)
		}
	}
}

// A pending job due later shows as scheduled, as list and status show it,
// and the overview counts it on a tile of its own.
func TestScheduledJobsShowAsScheduled(t *testing.T) {
	h := tokens(t)
	h.enqueue(`{"id":"later","command":"true","run_at":"+1h"}`)
	h.enqueue(`{"id":"now","command":"true"}`)
	c := h.signIn(viewerToken)
	if body, _ := h.page("/jobs", c); strings.Count(body, `<span class="badge state-scheduled">scheduled</span>`) != 1 ||
		strings.Count(body, `<span class="badge state-pending">pending</span>`) != 1 {
		t.Errorf("/jobs does not show one scheduled and one pending job")
	}
	if body, _ := h.page("/jobs/later", c); !strings.Contains(body, `id="job-state">scheduled<`) {
		t.Errorf("the scheduled job's page does not say scheduled")
	}
	body, _ := h.page("/", c)
	tile := regexp.MustCompile(`<a class="tile state-scheduled" href="/jobs\?state=scheduled">\s*<span class="tile-label">scheduled</span>\s*<span class="tile-value">1</span>`)
	if !tile.MatchString(body) {
		t.Errorf("the overview has no scheduled tile counting 1 and opening the scheduled list")
	}
	// The list the tile opens holds the scheduled job alone; the pending
	// list holds both (both are pending), and the filter offers scheduled.
	body, _ = h.page("/jobs?state=scheduled", c)
	if !strings.Contains(body, `href="/jobs/later"`) || strings.Contains(body, `href="/jobs/now"`) ||
		!strings.Contains(body, `<option value="scheduled" selected>scheduled</option>`) {
		t.Errorf("/jobs?state=scheduled does not list the scheduled job alone with the filter set")
	}
	if body, _ := h.page("/jobs?state=pending", c); !strings.Contains(body, `href="/jobs/later"`) || !strings.Contains(body, `href="/jobs/now"`) {
		t.Errorf("/jobs?state=pending does not list both pending jobs")
	}
}

// Sign-in and actions redirect only to a path of this site: a target with
// a tab or a line break (which browsers drop, making "/\t/evil.example"
// lead to evil.example) or one that does not parse goes to the overview,
// and an action with such a target still answers its redirect.
func TestRedirectTargetsStayOnSite(t *testing.T) {
	h := tokens(t)
	form := map[string]string{"Content-Type": "application/x-www-form-urlencoded"}
	for _, next := range []string{"/\t/evil.example", "/\n/evil.example", "/\r\n/evil.example", "/%zz", "https://evil.example/", "//evil.example",
		"/\\evil.example", "/./\\evil.example", "/jobs/../\\evil.example", "/.\\/evil.example"} {
		rec := h.must(req{method: "POST", path: "/login", body: url.Values{"token": {adminToken}, "next": {next}}.Encode(), header: form},
			http.StatusSeeOther)
		if loc := rec.Header().Get("Location"); loc != "/" {
			t.Errorf("sign-in with next %q goes to %q, want /", next, loc)
		}
	}
	h.enqueue(`{"id":"p","command":"true"}`)
	c := h.signIn(adminToken)
	_, csrf := h.page("/workers", c)
	for _, back := range []string{"/\t/evil.example", "/%zz", "/./\\evil.example"} {
		rec := h.must(req{method: "POST", path: "/queues/default/pause", body: url.Values{"csrf": {csrf}, "back": {back}}.Encode(),
			cookies: []*http.Cookie{c}, header: form}, http.StatusSeeOther)
		if loc := rec.Header().Get("Location"); loc != "/?done=queue_paused" {
			t.Errorf("an action with back %q goes to %q, want /?done=queue_paused", back, loc)
		}
	}
}

// A list filtered by label keeps the filter on its next page, in its
// filter form and in the way back to the newest jobs; one filtered by a
// queue keeps it in the form even when the queue holds no job.
func TestJobsPagesKeepTheLabelFilter(t *testing.T) {
	h := tokens(t)
	for i := range 4 {
		team := "web"
		if i%2 == 1 {
			team = "ops"
		}
		h.enqueue(fmt.Sprintf(`{"id":"j%d","command":"true","labels":{"team":%q}}`, i, team))
	}
	c := h.signIn(viewerToken)
	first, _ := h.page("/jobs?label=team%3Dweb&limit=1", c)
	next := regexp.MustCompile(`rel="next" href="([^"]+)"`).FindStringSubmatch(first)
	if next == nil {
		t.Fatalf("the first page has no next page:\n%s", first)
	}
	href := html.UnescapeString(next[1])
	if !strings.Contains(href, "label=team%3dweb") && !strings.Contains(href, "label=team%3Dweb") {
		t.Errorf("the next page %q drops the label filter", href)
	}
	if !strings.Contains(first, `<input type="hidden" name="label" value="team=web">`) {
		t.Errorf("the filter form drops the label filter:\n%s", first)
	}
	// The form adds a label filter from its field; left empty, none.
	if !strings.Contains(first, `name="label" class="label-input mono"`) {
		t.Errorf("the filter form has no field to add a label filter")
	}
	if body, _ := h.page("/jobs?q=&state=&queue=&label=", c); !strings.Contains(body, `href="/jobs/j1"`) {
		t.Errorf("an empty label field filtered the list")
	}
	if body, _ := h.page("/jobs?label=team%3Dops&label=", c); strings.Contains(body, `href="/jobs/j0"`) || !strings.Contains(body, `href="/jobs/j1"`) {
		t.Errorf("a label typed in the field does not filter the list")
	}
	// Typed with spaces around it, or for a key already filtered (which it
	// replaces): still one filter.
	if body, _ := h.page("/jobs?label=team%3Dweb&label=+team%3Dops+", c); strings.Contains(body, `href="/jobs/j0"`) || !strings.Contains(body, `href="/jobs/j1"`) ||
		strings.Contains(body, `value="team=web"`) {
		t.Errorf("a label typed for a key already filtered does not replace its filter")
	}
	// The page size asked for holds on the next page and in the form.
	if !strings.Contains(href, "limit=1") || !strings.Contains(first, `<input type="hidden" name="limit" value="1">`) {
		t.Errorf("the next page %q or the filter form drops the page size", href)
	}
	// A queue without jobs stays named in the filter.
	if empty, _ := h.page("/jobs?queue=nothing-here", c); !strings.Contains(empty, `<option value="nothing-here" selected>`) {
		t.Errorf("the filter of a queue without jobs does not name it:\n%s", empty)
	}
	second, _ := h.page(href, c)
	if strings.Contains(second, `href="/jobs/j1"`) || strings.Contains(second, `href="/jobs/j3"`) {
		t.Errorf("the next page of team=web shows team=ops jobs:\n%s", second)
	}
}

// The run time chart's axis labels name the values of its evenly spaced
// lines exactly, in one unit: a 5 ms top once read 0, 1ms, 2ms, 4ms, 5ms.
func TestChartAxisLabels(t *testing.T) {
	rg := chartRanges[0]
	now := time.Date(2026, 5, 1, 12, 33, 0, 0, time.UTC)
	labels := regexp.MustCompile(`text-anchor="end">([^<]+)<`)
	for _, tc := range []struct {
		p95  time.Duration
		want string
	}{
		{800 * time.Microsecond, "0 0.25ms 0.5ms 0.75ms 1ms"},
		{4 * time.Millisecond, "0 1.25ms 2.5ms 3.75ms 5ms"},
		{1500 * time.Millisecond, "0 0.5s 1s 1.5s 2s"},
		{40 * time.Second, "0 12.5s 25s 37.5s 50s"},
		{150 * time.Second, "0 1.25m 2.5m 3.75m 5m"},
	} {
		b := bucketize(nil, rg, now)
		b[3].P95 = tc.p95
		var got []string
		for _, m := range labels.FindAllStringSubmatch(string(runTimeChart(b, rg)), -1) {
			got = append(got, m[1])
		}
		if strings.Join(got, " ") != tc.want {
			t.Errorf("p95 %v: axis labels %v, want %s", tc.p95, got, tc.want)
		}
	}
	// So do the failure rate's: a 50 % top once read 12% and 38%.
	for _, tc := range []struct {
		failed, succeeded int
		want              string
	}{
		{1, 99, "0% 1.25% 2.5% 3.75% 5%"},
		{1, 1, "0% 12.5% 25% 37.5% 50%"},
	} {
		b := bucketize(nil, rg, now)
		b[3].Failed, b[3].Succeeded = tc.failed, tc.succeeded
		var got []string
		for _, m := range labels.FindAllStringSubmatch(string(failureChart(b, rg)), -1) {
			got = append(got, m[1])
		}
		if strings.Join(got, " ") != tc.want {
			t.Errorf("%d of %d failed: axis labels %v, want %s", tc.failed, tc.failed+tc.succeeded, got, tc.want)
		}
	}
}

// Retry all or discard all from a later page of the dead-letter queue
// leads to its first page: the later page's cursor, a dead job, has just
// been retried or deleted, and going back to it was a 400.
func TestDLQBulkActionFromALaterPage(t *testing.T) {
	h := tokens(t)
	h.deadJobs("mail&more", "d1", "d2")
	c := h.signIn(adminToken)
	back := regexp.MustCompile(`action="/dlq/discard"[^>]*>\s*<input type="hidden" name="csrf" value="[^"]*"><input type="hidden" name="queue" value="[^"]*"><input type="hidden" name="back" value="([^"]*)">`)
	page, csrf := h.page("/dlq?queue=mail%26more&after=d2", c)
	m := back.FindStringSubmatch(page)
	if m == nil {
		t.Fatalf("no discard-all form on the later page:\n%s", page)
	}
	rec := h.must(req{method: "POST", path: "/dlq/discard", body: url.Values{"csrf": {csrf}, "queue": {"mail&more"}, "back": {html.UnescapeString(m[1])}}.Encode(),
		cookies: []*http.Cookie{c}, header: map[string]string{"Content-Type": "application/x-www-form-urlencoded"}}, http.StatusSeeOther)
	loc := rec.Header().Get("Location")
	if strings.Contains(loc, "after=") || !strings.Contains(loc, "queue=mail%26more") {
		t.Errorf("discard all leads to %s, not the first page of the queue's dead jobs", loc)
	}
	// That page's queue filter still names the queue, which has no dead
	// job left.
	first, _ := h.page(loc, c)
	if !strings.Contains(first, `<option value="mail&amp;more" selected>`) {
		t.Errorf("the first page's filter does not name its queue:\n%s", first)
	}
}

// storedControl reads queue name's stored control (the zero one if none).
func storedControl(t *testing.T, st queue.Store, name string) queue.QueueControl {
	t.Helper()
	cs, err := st.QueueControls(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cs {
		if c.Name == name {
			return c
		}
	}
	return queue.QueueControl{}
}

// A later page of the dead-letter queue, which does not refresh itself,
// links back to the first page of its queue's dead jobs, as the jobs
// page's do: only the navigation led back, and it drops the queue.
func TestDLQLaterPageLinksTheFirst(t *testing.T) {
	h := tokens(t)
	h.deadJobs("mail&more", "d1", "d2")
	c := h.signIn(viewerToken)
	page, _ := h.page("/dlq?queue=mail%26more&after=d2", c)
	if !strings.Contains(page, `href="/dlq?queue=mail%26more">« Newest</a>`) {
		t.Errorf("the later page does not link the first:\n%s", page)
	}
	if first, _ := h.page("/dlq?queue=mail%26more", c); strings.Contains(first, "« Newest") {
		t.Errorf("the first page links itself as the newest")
	}
}

// The overview's chart range says which range is shown to a screen
// reader too, as the navigation says which page: only its look did.
func TestOverviewRangeIsCurrent(t *testing.T) {
	h := tokens(t)
	c := h.signIn(viewerToken)
	for path, want := range map[string]string{"/": "Last hour", "/?range=24h": "Last 24 hours"} {
		body, _ := h.page(path, c)
		m := regexp.MustCompile(`<a href="/\?range=[^"]*" class="on" aria-current="true">([^<]*)</a>`).FindAllStringSubmatch(body, -1)
		if len(m) != 1 || m[0][1] != want {
			t.Errorf("%s: the current range is %v, want %s", path, m, want)
		}
	}
}

// A later page of the dead-letter queue left without rows (its jobs
// retried or discarded one by one) does not call the queue empty above
// the count of the dead jobs still in it.
func TestDLQEmptyLaterPage(t *testing.T) {
	h := tokens(t)
	for _, id := range []string{"d1", "d2"} {
		h.enqueue(`{"id":"` + id + `","command":"false","max_retries":0}`)
		h.runJob(id, queue.OutcomeFailed, "")
	}
	c := h.signIn(viewerToken)
	page, _ := h.page("/dlq?after=d1", c)
	if !strings.Contains(page, "2 dead job(s)") || strings.Contains(page, "The dead-letter queue is empty.") || !strings.Contains(page, "No older dead job.") {
		t.Errorf("a later page without rows:\n%s", page)
	}
	if first, _ := h.page("/dlq?queue=other", c); !strings.Contains(first, "The dead-letter queue is empty.") {
		t.Errorf("the first page of a queue without dead jobs does not say it is empty")
	}
}
