package web

import (
	"fmt"
	"html/template"
	"net/url"
	"strings"
	"time"

	"github.com/queuectl/queuectl/internal/view"
	"github.com/queuectl/queuectl/queue"
)

// funcs are the helpers the page templates use.
var funcs = template.FuncMap{
	// path escapes an id or a name for one segment of a URL path: ids
	// may hold "/", "?", "#" and "%", which a link must not take for
	// its structure (html/template keeps them in a path).
	"path":  url.PathEscape,
	"since": since,
	"utc": func(t time.Time) string {
		if t.IsZero() {
			return "—"
		}
		return t.UTC().Format("2006-01-02 15:04:05 UTC")
	},
	"utcp": func(t *time.Time) string {
		if t == nil {
			return "—"
		}
		return t.UTC().Format("2006-01-02 15:04:05 UTC")
	},
	"dur": func(d time.Duration) string {
		switch {
		case d < time.Second:
			return fmt.Sprintf("%dms", d.Milliseconds())
		case d < time.Minute:
			return fmt.Sprintf("%.1fs", d.Seconds())
		}
		return d.Round(time.Second).String()
	},
	"ageSeconds": func(p *float64) string {
		if p == nil {
			return "—"
		}
		return strings.TrimSuffix(since(time.Unix(0, 0).Add(time.Duration(*p*float64(time.Second))), time.Unix(0, 0)), " ago")
	},
	// inZone shows a fire time on the template's own clock, as its
	// schedule reads ("every day at 02:30" fires at 02:30 CET).
	"inZone": func(t time.Time, zone string) string {
		loc, err := time.LoadLocation(zone)
		if err != nil || zone == "" {
			loc = time.UTC
		}
		return t.In(loc).Format("Mon Jan 2 15:04 MST")
	},
	"stale":   func(now, t time.Time) bool { return now.Sub(t) >= view.WorkerAlive },
	"visible": visible,
	"short": func(s string, n int) string {
		s = visible(strings.Join(strings.Fields(s), " "))
		if r := []rune(s); len(r) > n {
			return string(r[:n-1]) + "…"
		}
		return s
	},
	"join":   strings.Join,
	"fmtdur": queue.FormatDuration,
	"states": queue.States,
	// tileStates are the overview's tiles: the states with scheduled
	// beside pending, as status counts them.
	"tileStates": view.StatusStates,
	// shown is a job's state as list and show print it: a pending job
	// due later is scheduled.
	"shown": view.ShownState,
	"count": func(m map[queue.State]int, s queue.State) int {
		return m[s]
	},
	"exit": func(a *queue.Attempt) string {
		switch {
		case a.Signal != "":
			return a.Signal
		case a.ExitCode != nil:
			return fmt.Sprint(*a.ExitCode)
		}
		return "—"
	},
	"deref": func(p *string) string {
		if p == nil {
			return ""
		}
		return *p
	},
	"timeout": func(p *float64) string {
		if p == nil {
			return "none"
		}
		return queue.FormatDuration(time.Duration(*p * float64(time.Second)))
	},
	"pct": func(v float64) string { return fmt.Sprintf("%.1f%%", v*100) },
}
