package web

import (
	"context"
	"html"
	"regexp"
	"strings"
	"testing"

	"github.com/queuectl/queuectl/queue"
)

var (
	controlTag = regexp.MustCompile(`(?s)<(button|summary|a)\b([^>]*)>(.*?)</(?:button|summary|a)>`)
	inputTag   = regexp.MustCompile(`<input\b([^>]*)>`)
	emptyTH    = regexp.MustCompile(`<th\b[^>]*>\s*</th>`)
	ariaLabel  = regexp.MustCompile(`\baria-label="([^"]*)"`)
	anyTag     = regexp.MustCompile(`<[^>]+>`)
)

// control is a button, disclosure or link of a page with its accessible
// name: its aria-label, else its text.
type control struct{ tag, name string }

// controls lists the buttons, disclosures, links and fields (by their
// aria-label: a label around a field of a row says only what it is, not
// whose) of the tables of body.
func controls(body string) []control {
	var out []control
	for _, table := range regexp.MustCompile(`(?s)<table.*?</table>`).FindAllString(body, -1) {
		for _, m := range controlTag.FindAllStringSubmatch(table, -1) {
			name := strings.Join(strings.Fields(html.UnescapeString(anyTag.ReplaceAllString(m[3], " "))), " ")
			if l := ariaLabel.FindStringSubmatch(m[2]); l != nil {
				name = html.UnescapeString(l[1])
			}
			out = append(out, control{m[1], name})
		}
		for _, m := range inputTag.FindAllStringSubmatch(table, -1) {
			if strings.Contains(m[1], `type="hidden"`) {
				continue
			}
			name := ""
			if l := ariaLabel.FindStringSubmatch(m[1]); l != nil {
				name = html.UnescapeString(l[1])
			}
			out = append(out, control{"input", name})
		}
	}
	return out
}

// The actions in the rows of a table each name what they act on: a screen
// reader listing a page's buttons heard "Retry, Discard, Retry, Discard",
// and a speech user could not say which to press. Each name still starts
// with the words the button shows (WCAG 2.5.3, label in name).
func TestRowActionsNameTheirObject(t *testing.T) {
	h := tokens(t)
	ctx := context.Background()
	h.deadJobs("default", "dead-1", "dead-2")
	h.enqueue(`{"id":"m","command":"true","queue":"mail"}`)
	if err := h.store.UpdateQueueControls(ctx, queue.ControlUpdate{Names: []string{"mail"}, Paused: ptr(true)}); err != nil {
		t.Fatal(err)
	}
	if err := h.store.ApplyTemplates(ctx, []*queue.Template{
		{Name: "nightly", Schedule: "0 3 * * *", TimeZone: "UTC", Command: "backup", Overlap: queue.OverlapSkip, CatchUp: queue.CatchUpNone, Enabled: true},
		{Name: "report", Schedule: "*/15 * * * *", TimeZone: "UTC", Command: "report", Overlap: queue.OverlapSkip, CatchUp: queue.CatchUpNone},
	}, h.clock.Now()); err != nil {
		t.Fatal(err)
	}
	c := h.signIn(adminToken)
	for path, want := range map[string][]string{
		"/cron": {"Trigger now: nightly", "Trigger now: report"},
		"/dlq":  {"Retry job dead-1", "Discard job dead-1", "Retry job dead-2", "Discard job dead-2"},
		"/workers": {"Pause queue default", "Limits of queue default", "Set limits of queue default", "Resume queue mail", "Limits of queue mail", "Set limits of queue mail",
			"Max running of queue default", "Rate of queue mail"},
		"/": {"Pause queue default", "Resume queue mail"},
	} {
		body, _ := h.page(path, c)
		// A column of buttons has a header a screen reader can say.
		if th := emptyTH.FindString(body); th != "" {
			t.Errorf("%s: a table column has no header: %s", path, th)
		}
		seen := map[string]string{}
		for _, ctl := range controls(body) {
			if ctl.tag == "a" {
				continue // links name their job or queue by their text
			}
			if ctl.name == "" {
				t.Errorf("%s: an %s element in its tables has no name", path, ctl.tag)
			} else if seen[ctl.name] != "" {
				t.Errorf("%s: two %s elements in its tables are both named %q", path, ctl.tag, ctl.name)
			}
			seen[ctl.name] = ctl.tag
		}
		for _, name := range want {
			if seen[name] == "" {
				t.Errorf("%s: no button named %q; the names are %v", path, name, seen)
			}
		}
	}
	// A job page's raw output links name their attempt.
	body, _ := h.page("/jobs/dead-1", c)
	if !strings.Contains(body, `aria-label="Raw output of attempt 1">raw</a>`) {
		t.Errorf("the job page's raw output link does not name its attempt")
	}
}
