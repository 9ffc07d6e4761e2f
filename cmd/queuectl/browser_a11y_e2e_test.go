package main

import (
	"context"
	"encoding/json"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/accessibility"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
)

// buttonNames returns the accessible names of the buttons and disclosures
// of the page open in ctx, as Chromium computes them for assistive
// technology (hidden ones, such as a closed form's, left out).
func buttonNames(t *testing.T, ctx context.Context, what string) []string {
	t.Helper()
	tree, err := chromedp.Call(ctx, accessibility.GetFullAXTree, accessibility.GetFullAXTreeParams{})
	if err != nil {
		t.Fatalf("%s: accessibility tree: %v", what, err)
	}
	var names []string
	for _, n := range tree.Nodes {
		if n.Ignored || n.Role == nil || n.Name == nil {
			continue
		}
		var role, name string
		json.Unmarshal(n.Role.Value, &role)
		json.Unmarshal(n.Name.Value, &name)
		if role == "button" || role == "DisclosureTriangle" {
			names = append(names, name)
		}
	}
	return names
}

// focusRing is how the focused element of a page shows the focus.
type focusRing struct {
	Visible bool    `json:"visible"` // it matches :focus-visible
	Style   string  `json:"style"`
	Width   float64 `json:"width"`
	Ratio   float64 `json:"ratio"` // contrast of the outline with the background it is drawn on
}

// focusAfterTab moves the keyboard focus to the element sel, as Tab would
// reach it (a Tab first makes the browser show the focus), and measures
// its ring: the WCAG contrast of its outline colour with the first
// background behind it that is not transparent.
func focusAfterTab(t *testing.T, ctx context.Context, sel string) focusRing {
	t.Helper()
	step(t, ctx, "press Tab", chromedp.KeyEvent("\t"))
	return value(t, ctx, "the focus ring of "+sel, chromedp.Evaluate[focusRing](`(sel => {
		const el = document.querySelector(sel); el.focus();
		const cs = getComputedStyle(el), rgb = s => s.match(/[\d.]+/g).map(Number);
		let bg = [255, 255, 255];
		for (let n = el.parentElement; n; n = n.parentElement) {
			const c = rgb(getComputedStyle(n).backgroundColor);
			if (c.length < 4 || c[3] > 0) { bg = c; break; }
		}
		const lum = c => { const [r, g, b] = c.slice(0, 3).map(v => { v /= 255; return v <= 0.04045 ? v / 12.92 : Math.pow((v + 0.055) / 1.055, 2.4); });
			return 0.2126 * r + 0.7152 * g + 0.0722 * b; };
		const a = lum(rgb(cs.outlineColor)), b = lum(bg);
		return {visible: el.matches(":focus-visible"), style: cs.outlineStyle, width: parseFloat(cs.outlineWidth),
			ratio: (Math.max(a, b) + 0.05) / (Math.min(a, b) + 0.05)};
	})(`+"`"+sel+"`"+`)`))
}

// The dashboard as a keyboard and screen reader user meets it, in Chromium:
// the buttons in the rows of a table each name their object, the focus
// ring stands out at least 3:1 from what it is drawn on, and a disabled
// recurring job's trigger says so and runs it once, as cron trigger does.
func TestE2EBrowserDashboardAccessibility(t *testing.T) {
	ctx := browser(t)
	// The confirmation each action asks (the browser accepts them all).
	questions := make(chan string, 10)
	dialogs := chromedp.Events(ctx, page.JavascriptDialogOpening)
	go func() {
		for ev, err := range dialogs {
			if err != nil {
				return
			}
			select {
			case questions <- ev.Message:
			default:
			}
		}
	}()
	c := newCLI(t)
	cfg := filepath.Join(c.home, "queue.hcl")
	writeFile(t, cfg, `
queue "default" { concurrency = 1 }
queue "mail" { concurrency = 1 }
job "nightly" {
  schedule = "30 2 * * *"
  overlap  = "allow"
  command  = "true"
}
job "export" {
  schedule = "0 4 * * *"
  overlap  = "allow"
  command  = "true"
  enabled  = false
}
`)
	// The CLI triggers the disabled job (and applies the file).
	if out := c.ok("cron", "trigger", "export", "-c", cfg); !strings.HasPrefix(out, "export-manual-") {
		t.Fatalf("cron trigger of the disabled job printed %q", out)
	}
	for _, id := range []string{"dead-1", "dead-2"} {
		c.ok("enqueue", "--id", id, "--max-retries", "0", "--command", "exit 3")
	}
	c.ok("enqueue", "--id", "mail-1", "--queue", "mail", "--run-at", "+1h", "--command", "true")
	c.ok("queue", "pause", "mail")
	c.ok("worker", "start", "--count", "1")
	c.waitState("dead-1", "dead", 30*time.Second)
	c.waitState("dead-2", "dead", 30*time.Second)
	s := startServe(t, c, nil, "--listen", "127.0.0.1:0")

	for path, want := range map[string][]string{
		"/cron":    {"Trigger now: nightly", "Trigger now: export"},
		"/dlq":     {"Retry job dead-1", "Discard job dead-1", "Retry job dead-2", "Discard job dead-2", "Retry all", "Discard all"},
		"/workers": {"Pause queue default", "Limits of queue default", "Resume queue mail", "Limits of queue mail"},
	} {
		step(t, ctx, "open "+path, chromedp.Navigate(s.url+path), chromedp.WaitVisible(chromedp.CSS(`.grid`)))
		names := buttonNames(t, ctx, path)
		for _, name := range want {
			if !slices.Contains(names, name) {
				t.Errorf("%s: no button named %q; the buttons are %q", path, name, names)
			}
		}
		slices.Sort(names)
		if d := slices.Compact(slices.Clone(names)); len(d) != len(names) {
			t.Errorf("%s: buttons share a name: %q", path, names)
		}
	}

	// The focus ring, on a row's button and on the dark top bar.
	step(t, ctx, "open the cron page", chromedp.Navigate(s.url+"/cron"), chromedp.WaitVisible(chromedp.CSS(`.grid`)))
	for _, sel := range []string{`form[action="/cron/nightly/trigger"] button`, `.topbar nav a[href="/jobs"]`} {
		ring := focusAfterTab(t, ctx, sel)
		if !ring.Visible || ring.Style != "solid" || ring.Width < 2 || ring.Ratio < 3 {
			t.Errorf("the focus ring of %s: %+v, want a visible solid outline of 2 px or more at 3:1 or more", sel, ring)
		}
	}
	focusAfterTab(t, ctx, `form[action="/cron/nightly/trigger"] button`)
	screenshot(t, ctx, "cron-focus")

	// The disabled job says it runs only when triggered, asks before it
	// does, and runs once from the page as from the CLI.
	note := value(t, ctx, "the disabled job's note", chromedp.Evaluate[string](
		`document.getElementById(document.querySelector('form[action="/cron/export/trigger"] button').getAttribute("aria-describedby")).textContent`))
	if note != "runs only when triggered" {
		t.Errorf("the disabled job's trigger is described by %q", note)
	}
	step(t, ctx, "trigger the disabled job", chromedp.Click(chromedp.CSS(`form[action="/cron/export/trigger"] button`)),
		chromedp.WaitVisible(chromedp.CSS(`.flash a`)))
	select {
	case q := <-questions:
		if want := "export is disabled: it does not fire on its schedule. Run it once now?"; q != want {
			t.Errorf("the trigger of the disabled job asked %q, want %q", q, want)
		}
	case <-time.After(10 * time.Second):
		t.Error("the trigger of the disabled job asked nothing")
	}
	if jobs := c.templateJobs("export"); len(jobs) != 2 {
		t.Errorf("the disabled job has %d jobs after a trigger from the CLI and one from the page, want 2", len(jobs))
	}
}
