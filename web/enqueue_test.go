package web

import (
	"context"
	"html"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/queuectl/queuectl/queue"
)

// The dashboard's enqueue form: admin only, CSRF-checked, the API's checks,
// and a refused job shows the form again with nothing stored.
func TestEnqueueFromThePage(t *testing.T) {
	h := tokens(t)
	form := map[string]string{"Content-Type": "application/x-www-form-urlencoded"}
	v := h.signIn(viewerToken)
	h.must(req{path: "/enqueue", cookies: []*http.Cookie{v}, header: map[string]string{"Accept": "text/html"}}, http.StatusForbidden)
	_, vcsrf := h.page("/jobs", v)
	h.must(req{method: "POST", path: "/enqueue", body: "command=true&csrf=" + vcsrf, cookies: []*http.Cookie{v}, header: form}, http.StatusForbidden)

	c := h.signIn(adminToken)
	body, csrf := h.page("/enqueue?queue=mail", c)
	if !strings.Contains(body, `name="queue" value="mail"`) {
		t.Errorf("the form does not start with the queue asked for")
	}
	post := func(vals url.Values) *http.Response {
		t.Helper()
		return h.do(req{method: "POST", path: "/enqueue", body: vals.Encode(), cookies: []*http.Cookie{c}, header: form}).Result()
	}
	if res := post(url.Values{"command": {"true"}}); res.StatusCode != http.StatusForbidden {
		t.Errorf("without the CSRF token: %d", res.StatusCode)
	}
	for field, vals := range map[string]url.Values{
		"priority":   {"command": {"echo hi"}, "priority": {"high"}},
		"queue":      {"command": {"echo hi"}, "queue": {"two words"}},
		"run_at":     {"command": {"echo hi"}, "run_at": {"soon"}},
		"env":        {"command": {"echo hi"}, "env": {"JUST_A_NAME"}},
		"command":    {"command": {"  "}},
		"labels":     {"command": {"echo hi"}, "labels": {"team=a\nteam=b"}},
		"after":      {"command": {"echo hi"}, "after": {"no-such-job"}},
		"unique_for": {"command": {"echo hi"}, "unique_key": {"k"}, "unique_for": {"soon"}},
	} {
		vals.Set("csrf", csrf)
		res := post(vals)
		page := new(strings.Builder)
		res.Write(page)
		if res.StatusCode != http.StatusBadRequest || !strings.Contains(page.String(), `id="enqueue-error"`) {
			t.Errorf("%s: status %d", field, res.StatusCode)
		}
		if field == "priority" && !strings.Contains(page.String(), `name="priority" value="high"`) {
			t.Errorf("the refused form lost what was typed")
		}
		if !strings.Contains(page.String(), `name="`+field+`"`) || !regexp.MustCompile(`name="`+field+`"[^>]*class="[^"]*bad`).MatchString(page.String()) {
			t.Errorf("%s: the refused field is not marked", field)
		}
	}
	if jobs, _ := h.store.ListJobs(context.Background(), queue.ListParams{}); len(jobs) != 0 {
		t.Fatalf("refused jobs were stored: %d", len(jobs))
	}
	if n := strings.Count(h.logs.String(), `{"level":"warn","error":`); n != 8 || !strings.Contains(h.logs.String(), `"action":"enqueue"`) {
		t.Errorf("%d warnings for 8 refused enqueues:\n%s", n, h.logs.String())
	}
	// A browser sends a textarea's line breaks as CRLF; the shell gets the
	// lines as typed.
	if res := post(url.Values{"csrf": {csrf}, "command": {"cd /tmp\r\necho one\r\n"}, "id": {"two-lines"}}); res.StatusCode != http.StatusSeeOther {
		t.Fatalf("enqueue two lines: %d", res.StatusCode)
	}
	if j, err := h.store.GetJob(context.Background(), "two-lines"); err != nil {
		t.Fatal(err)
	} else if j.Command != "cd /tmp\necho one\n" {
		t.Errorf("a command of two lines from the form is stored as %q", j.Command)
	}
	res := post(url.Values{"csrf": {csrf}, "command": {"echo <b>hi</b>"}, "queue": {"mail"}, "id": {"from-form"}, "priority": {"5"},
		"max_retries": {"1"}, "timeout": {"90s"}, "env": {"GREETING=hello\nEMPTY=\n"}, "dir": {"/tmp"}})
	if res.StatusCode != http.StatusSeeOther || res.Header.Get("Location") != "/jobs/from-form?done=enqueued" {
		t.Fatalf("enqueue: %d to %q", res.StatusCode, res.Header.Get("Location"))
	}
	j, err := h.store.GetJob(context.Background(), "from-form")
	if err != nil {
		t.Fatal(err)
	}
	if j.Command != "echo <b>hi</b>" || j.Queue != "mail" || j.Priority != 5 || j.MaxRetries != 1 || j.Timeout.Seconds() != 90 ||
		j.Env["GREETING"] != "hello" || j.Env["EMPTY"] != "" || len(j.Env) != 2 || j.Dir != "/tmp" {
		t.Errorf("stored job: %+v", j)
	}
	// Labels, the jobs it runs after and a unique key, as the API takes
	// them; a second job with the key is not added.
	for range 2 {
		res = post(url.Values{"csrf": {csrf}, "command": {"true"}, "labels": {"team=infra\r\ntier=1"},
			"after": {"two-lines  from-form\r\n"}, "unique_key": {"nightly"}, "unique_for": {"1h"}})
		if res.StatusCode != http.StatusSeeOther {
			t.Fatalf("enqueue with labels, after and a unique key: %d", res.StatusCode)
		}
	}
	// An id may hold a comma: the field splits on white space only.
	if res = post(url.Values{"csrf": {csrf}, "command": {"true"}, "id": {"build,1"}}); res.StatusCode != http.StatusSeeOther {
		t.Fatalf("enqueue build,1: %d", res.StatusCode)
	}
	if res = post(url.Values{"csrf": {csrf}, "command": {"true"}, "id": {"after-comma"}, "after": {"build,1"}}); res.StatusCode != http.StatusSeeOther {
		t.Fatalf("enqueue after build,1: %d", res.StatusCode)
	}
	if j, err := h.store.GetJob(context.Background(), "after-comma"); err != nil || !slices.Equal(j.After, []string{"build,1"}) {
		t.Errorf("a job after build,1 runs after %v, %v", j.After, err)
	}
	jobs, err := h.store.ListJobs(context.Background(), queue.ListParams{Labels: map[string]string{"team": "infra"}})
	if err != nil || len(jobs) != 1 {
		t.Fatalf("jobs labelled team=infra: %d, %v; want 1", len(jobs), err)
	}
	if j := jobs[0]; j.Labels["tier"] != "1" || !slices.Equal(slices.Sorted(slices.Values(j.After)), []string{"from-form", "two-lines"}) || j.UniqueKey != "nightly" || j.State != queue.StateWaiting {
		t.Errorf("stored job: labels %v, after %v, unique key %q, state %s", j.Labels, j.After, j.UniqueKey, j.State)
	}
}

// TestEnqueueAnswersTheStoredTimes enqueues at an instant finer than the
// stores keep (microseconds): the 201 answer shows the times a read of the
// job shows, not the finer ones.
func TestEnqueueAnswersTheStoredTimes(t *testing.T) {
	for _, sk := range stores() {
		t.Run(sk.name, func(t *testing.T) {
			h := newHarness(t, sk.open(t), adminToken, viewerToken)
			h.clock.Set(h.clock.Now().Add(789 * time.Nanosecond))
			for _, body := range []string{
				`{"id":"now","command":"true"}`,
				`{"id":"later","command":"true","run_at":"2099-01-02T03:04:05.123456789Z"}`,
			} {
				added := h.enqueue(body)
				read := decode[queue.JobJSON](t, h.must(req{path: "/api/v1/jobs/" + added.ID, token: adminToken}, http.StatusOK))
				if !added.CreatedAt.Equal(read.CreatedAt) || !added.UpdatedAt.Equal(read.UpdatedAt) || !added.RunAt.Equal(read.RunAt) {
					t.Errorf("%s: enqueue answered created %v updated %v run_at %v; the job reads %v %v %v", added.ID,
						added.CreatedAt, added.UpdatedAt, added.RunAt, read.CreatedAt, read.UpdatedAt, read.RunAt)
				}
			}
		})
	}
}

// A job from the form whose unique key an unfinished job holds adds
// nothing: the form leads to the job that holds the key and says so,
// not to the page of the id typed (or generated), which does not exist.
func TestEnqueueFromThePageUniqueKeyHeld(t *testing.T) {
	h := tokens(t)
	h.enqueue(`{"id":"holder","command":"true","unique_key":"nightly"}`)
	c := h.signIn(adminToken)
	_, csrf := h.page("/enqueue", c)
	for _, id := range []string{"second", ""} {
		vals := url.Values{"csrf": {csrf}, "command": {"true"}, "id": {id}, "unique_key": {"nightly"}}
		res := h.do(req{method: "POST", path: "/enqueue", body: vals.Encode(), cookies: []*http.Cookie{c},
			header: map[string]string{"Content-Type": "application/x-www-form-urlencoded"}}).Result()
		loc := res.Header.Get("Location")
		if res.StatusCode != http.StatusSeeOther || !strings.HasPrefix(loc, "/jobs/holder?") {
			t.Fatalf("id %q: %d to %q, want the holder's page", id, res.StatusCode, loc)
		}
		body, _ := h.page(loc, c)
		if !strings.Contains(body, "holds its unique key") || strings.Contains(body, "Job enqueued.") {
			t.Errorf("id %q: the holder's page does not say nothing was added:\n%s", id, body)
		}
	}
	if jobs, _ := h.store.ListJobs(context.Background(), queue.ListParams{}); len(jobs) != 1 {
		t.Errorf("%d jobs stored, want the holder only", len(jobs))
	}
}

// A job from the form whose id is taken comes back with the id field
// marked, as every other refused field is.
func TestEnqueueFromThePageTakenID(t *testing.T) {
	h := tokens(t)
	h.enqueue(`{"id":"taken","command":"true"}`)
	c := h.signIn(adminToken)
	_, csrf := h.page("/enqueue", c)
	vals := url.Values{"csrf": {csrf}, "command": {"echo again"}, "id": {"taken"}}
	rec := h.do(req{method: "POST", path: "/enqueue", body: vals.Encode(), cookies: []*http.Cookie{c},
		header: map[string]string{"Content-Type": "application/x-www-form-urlencoded", "Accept": "text/html"}})
	if rec.Code != http.StatusConflict || !strings.Contains(rec.Body.String(), `id="enqueue-error"`) {
		t.Fatalf("a taken id: %d\n%s", rec.Code, rec.Body.String())
	}
	if !regexp.MustCompile(`name="id"[^>]*class="[^"]*bad`).MatchString(rec.Body.String()) {
		t.Errorf("the taken id's field is not marked:\n%s", rec.Body.String())
	}
}

// The enqueue form's placeholders suggest only values the field takes:
// each example (after "e.g.", before a parenthesis, separated by commas
// or "or") typed into its field enqueues a job. Run at once suggested
// "now", and unique for "1h after", both refused.
func TestEnqueuePlaceholdersAreTaken(t *testing.T) {
	h := tokens(t)
	c := h.signIn(adminToken)
	body, csrf := h.page("/enqueue", c)
	for _, field := range []string{"timeout", "run_at", "unique_for"} {
		m := regexp.MustCompile(`name="` + field + `"[^>]*placeholder="([^"]*)"`).FindStringSubmatch(body)
		if m == nil {
			t.Fatalf("%s: no placeholder", field)
		}
		examples, _, _ := strings.Cut(strings.TrimPrefix(html.UnescapeString(m[1]), "e.g. "), " (")
		for _, ex := range regexp.MustCompile(`, | or `).Split(examples, -1) {
			vals := url.Values{"csrf": {csrf}, "command": {"true"}, field: {ex}}
			if field == "unique_for" {
				vals.Set("unique_key", "key-"+ex)
			}
			rec := h.do(req{method: "POST", path: "/enqueue", body: vals.Encode(), cookies: []*http.Cookie{c},
				header: map[string]string{"Content-Type": "application/x-www-form-urlencoded", "Accept": "text/html"}})
			if rec.Code != http.StatusSeeOther {
				t.Errorf("%s: the placeholder %q suggests %q, refused with %d", field, m[1], ex, rec.Code)
			}
		}
	}
}

// A form over the 1 MiB a body may hold is refused as too large, not as
// a form without its CSRF token, which could not be read: the page told
// an operator who pasted a long command to reload it.
func TestEnqueueFromThePageTooLarge(t *testing.T) {
	h := tokens(t)
	c := h.signIn(adminToken)
	_, csrf := h.page("/enqueue", c)
	vals := url.Values{"csrf": {csrf}, "command": {"echo " + strings.Repeat("a", maxBody)}}
	rec := h.do(req{method: "POST", path: "/enqueue", body: vals.Encode(), cookies: []*http.Cookie{c},
		header: map[string]string{"Content-Type": "application/x-www-form-urlencoded", "Accept": "text/html"}})
	if rec.Code != http.StatusRequestEntityTooLarge || !strings.Contains(rec.Body.String(), codeTooLarge) {
		t.Errorf("a form over 1 MiB: %d\n%s", rec.Code, rec.Body.String())
	}
}

// The field a refused job is marked at says so to a screen reader too,
// and points at the error: only its colour said it.
func TestEnqueueRefusedFieldIsInvalid(t *testing.T) {
	h := tokens(t)
	c := h.signIn(adminToken)
	_, csrf := h.page("/enqueue", c)
	for field, vals := range map[string]url.Values{
		"priority": {"command": {"echo hi"}, "priority": {"high"}},
		"env":      {"command": {"echo hi"}, "env": {"JUST_A_NAME"}},
		"command":  {"command": {"  "}},
	} {
		vals.Set("csrf", csrf)
		rec := h.do(req{method: "POST", path: "/enqueue", body: vals.Encode(), cookies: []*http.Cookie{c},
			header: map[string]string{"Content-Type": "application/x-www-form-urlencoded", "Accept": "text/html"}})
		marked := regexp.MustCompile(`<(input|textarea)[^>]*aria-invalid="true"[^>]*>`).FindAllString(rec.Body.String(), -1)
		if len(marked) != 1 || !strings.Contains(marked[0], `name="`+field+`"`) || !strings.Contains(marked[0], `aria-describedby="enqueue-error"`) {
			t.Errorf("%s: the fields marked invalid are %q", field, marked)
		}
	}
}
