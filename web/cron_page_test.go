package web

import (
	"context"
	"html"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/queuectl/queuectl/internal/view"
	"github.com/queuectl/queuectl/queue"
)

// cronRow returns the HTML of recurring job name's row on the cron page.
func cronRow(t *testing.T, body, name string) string {
	t.Helper()
	start := strings.Index(body, "<td><strong>"+name+"</strong>")
	if start < 0 {
		t.Fatalf("no row for recurring job %s in:\n%s", name, body)
	}
	row := body[start:]
	return row[:strings.Index(row, "</tr>")]
}

// regexpFind returns the first group of pattern's first match in s.
func regexpFind(t *testing.T, s, pattern string) string {
	t.Helper()
	m := regexp.MustCompile(pattern).FindStringSubmatch(s)
	if m == nil {
		t.Fatalf("no %s in:\n%s", pattern, s)
	}
	return m[1]
}

// A disabled recurring job is triggered from the page, the API and the CLI
// alike (cron trigger runs it once; its schedule stays off), and the page
// says so before it is pressed: the row, and the question it asks.
func TestTriggerDisabledJob(t *testing.T) {
	h := tokens(t)
	ctx := context.Background()
	if err := h.store.ApplyTemplates(ctx, []*queue.Template{
		{Name: "nightly", Schedule: "0 3 * * *", TimeZone: "UTC", Command: "backup", Overlap: queue.OverlapAllow, CatchUp: queue.CatchUpNone, Enabled: true},
		{Name: "ping", Schedule: "@every 90s", TimeZone: "UTC", Command: "curl", Overlap: queue.OverlapAllow, CatchUp: queue.CatchUpNone},
	}, h.clock.Now()); err != nil {
		t.Fatal(err)
	}
	c := h.signIn(adminToken)
	body, csrf := h.page("/cron", c)
	off, on := cronRow(t, body, "ping"), cronRow(t, body, "nightly")
	note := regexpFind(t, off, `<div class="muted small" id="([^"]+)">runs only when triggered</div>`)
	if !strings.Contains(off, `aria-describedby="`+note+`">Trigger now</button>`) {
		t.Errorf("the disabled job's trigger is not described by the note %q:\n%s", note, off)
	}
	if want := html.EscapeString("ping is disabled: it does not fire on its schedule. Run it once now?"); !strings.Contains(off, `data-confirm="`+want+`"`) {
		t.Errorf("the disabled job's trigger does not ask %q:\n%s", want, off)
	}
	if strings.Contains(on, "runs only when triggered") || strings.Contains(on, "aria-describedby") || !strings.Contains(on, `data-confirm="Run nightly now?"`) {
		t.Errorf("the enabled job's row:\n%s", on)
	}

	// The page's trigger, as the API's, adds a run and leaves the job disabled.
	rec := h.must(req{method: "POST", path: "/cron/ping/trigger", body: "csrf=" + csrf + "&back=/cron", cookies: []*http.Cookie{c},
		header: map[string]string{"Content-Type": "application/x-www-form-urlencoded"}}, http.StatusSeeOther)
	if body, _ := h.page(rec.Header().Get("Location"), c); !strings.Contains(body, "Recurring job triggered.") {
		t.Errorf("no message after the page's trigger (%s)", rec.Header().Get("Location"))
	}
	h.clock.Advance(time.Second)
	res := decode[triggerResult](t, h.must(req{method: "POST", path: "/api/v1/cron/ping/trigger", token: adminToken}, http.StatusOK))
	if !res.Fired || res.JobID == "" {
		t.Fatalf("the API's trigger of the disabled job: %+v", res)
	}
	jobs, err := h.store.ListJobs(ctx, queue.ListParams{Limit: 10})
	if err != nil || len(jobs) != 2 || jobs[0].Template != "ping" || jobs[1].Template != "ping" {
		t.Fatalf("jobs after two triggers of the disabled job: %v, %v", jobs, err)
	}
	for _, ct := range decode[[]view.CronTemplate](t, h.must(req{path: "/api/v1/cron", token: viewerToken}, http.StatusOK)) {
		if ct.Name == "ping" && ct.Enabled {
			t.Errorf("after the triggers: %+v", ct)
		}
	}
}
