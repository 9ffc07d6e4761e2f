package web

import (
	"bytes"
	"context"
	"embed"
	"fmt"
	"html/template"
	"io/fs"
	"net/http"
	"net/url"
	"strings"
	"time"
)

//go:embed templates/*.html
var templateFS embed.FS

//go:embed static
var staticFS embed.FS

// pages holds the parsed page templates: each page is the layout plus its
// own file.
type pages struct {
	tmpl   map[string]*template.Template
	static http.Handler
}

func newPages() (*pages, error) {
	layout, err := template.New("layout.html").Funcs(funcs).ParseFS(templateFS, "templates/layout.html", "templates/partials.html")
	if err != nil {
		return nil, fmt.Errorf("parse layout: %w", err)
	}
	names, err := fs.Glob(templateFS, "templates/*.html")
	if err != nil {
		return nil, err
	}
	p := &pages{tmpl: map[string]*template.Template{}}
	for _, name := range names {
		base := strings.TrimSuffix(strings.TrimPrefix(name, "templates/"), ".html")
		if base == "layout" || base == "partials" {
			continue
		}
		t, err := template.Must(layout.Clone()).ParseFS(templateFS, name)
		if err != nil {
			return nil, fmt.Errorf("parse %s: %w", name, err)
		}
		p.tmpl[base] = t
	}
	sub, err := fs.Sub(staticFS, "static")
	if err != nil {
		return nil, err
	}
	p.static = http.StripPrefix("/static/", http.FileServerFS(sub))
	return p, nil
}

// page is what every page template gets.
type page struct {
	Title string
	Nav   string // the active navigation entry
	Role  role
	Admin bool
	Open  bool // no tokens configured
	CSRF  string
	Flash string
	// FlashJob is a job the flash message links to (the job a cron
	// trigger added).
	FlashJob string
	Path     string // the request's path and query, for forms that come back
	Now      time.Time
	Data     any
}

// render writes a page; a template error becomes a plain 500.
func (s *Server) render(w http.ResponseWriter, r *http.Request, status int, name string, p page) {
	id := identityOf(r)
	p.Role, p.Admin, p.Open = id.role, id.role >= roleAdmin, s.auth.open()
	p.CSRF = s.auth.csrfToken(id)
	p.Now = s.now()
	p.Path = r.URL.RequestURI()
	if p.Flash == "" {
		p.Flash = flashMessage(r.URL.Query())
		if r.URL.Query().Get("done") == "triggered" {
			p.FlashJob = r.URL.Query().Get("job")
		}
	}
	var buf bytes.Buffer
	if err := s.pages.tmpl[name].ExecuteTemplate(&buf, "layout.html", p); err != nil {
		s.cfg.Log.Error().Err(err).Str("page", name).Msg("render page")
		http.Error(w, "internal error", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	w.Write(buf.Bytes())
}

// errorData is what the error page shows.
type errorData struct {
	*apiError
	SignOutAgain bool // a sign-out the store did not record: offer another
}

// errorPage shows an API error to a browser; a signed-in reader keeps the
// navigation, with no entry active, to go on from where the error left
// them.
func (s *Server) errorPage(w http.ResponseWriter, r *http.Request, e errorData) {
	p := page{Title: http.StatusText(e.Status), Data: e}
	if identityOf(r).role >= roleViewer {
		p.Nav = "error"
	}
	s.render(w, r, e.Status, "error", p)
}

// pageFunc renders one page, or returns an error to show.
type pageFunc func(w http.ResponseWriter, r *http.Request) error

// view adapts a pageFunc: viewer role, a deadline on the store calls.
func (s *Server) view(fn pageFunc) http.Handler { return s.pageAs(roleViewer, fn) }

// pageAs adapts a pageFunc for role min (and CSRF for a POST), with a
// deadline on the store calls.
func (s *Server) pageAs(min role, fn pageFunc) http.Handler {
	return s.needForm(min, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), requestTimeout)
		defer cancel()
		if err := fn(w, r.WithContext(ctx)); err != nil {
			s.fail(w, r, err)
		}
	}))
}

// actionFunc performs an admin action from a page's form and says where to
// go next.
type actionFunc func(r *http.Request) (url.Values, error)

// action adapts an actionFunc: admin role, CSRF token, then a redirect
// (303) back to the page the form names, with a message.
func (s *Server) action(fn actionFunc) http.Handler {
	return s.needForm(roleAdmin, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), requestTimeout)
		defer cancel()
		done, err := fn(r.WithContext(ctx))
		if err != nil {
			s.fail(w, r, err)
			return
		}
		back := safeNext(r.PostFormValue("back"))
		u, _ := url.Parse(back)
		q := u.Query()
		for k, v := range done {
			q[k] = v
		}
		u.RawQuery = q.Encode()
		http.Redirect(w, r, u.String(), http.StatusSeeOther)
	}))
}

// safeNext keeps a redirect target on this site: a path, never a URL.
// It must parse as a URL without scheme or host: a browser drops tabs and
// line breaks from a Location, so "/\t/evil.example" would lead off the
// site, and an action's redirect adds its message to the parsed target.
// Its path holds no backslash: http.Redirect cleans the path, turning
// "/./\\evil.example" into "/\\evil.example", which browsers read as
// "//evil.example", another site.
func safeNext(next string) string {
	u, err := url.Parse(next)
	path, _, _ := strings.Cut(next, "?")
	if err != nil || u.Scheme != "" || u.Host != "" ||
		!strings.HasPrefix(next, "/") || strings.HasPrefix(next, "//") || strings.Contains(path, "\\") {
		return "/"
	}
	return next
}

// flashMessage says what an action did, from the fixed codes actions put
// in the query (never text from the request itself).
func flashMessage(q url.Values) string {
	n := q.Get("n")
	if n != "" && strings.Trim(n, "0123456789") != "" {
		n = ""
	}
	switch q.Get("done") {
	case "retried":
		return "Job sent back to the queue."
	case "cancelled":
		return "Job cancelled."
	case "cancel_requested":
		return "Cancel requested: the worker stops the job's processes."
	case "discarded":
		return "Job discarded."
	case "dlq_retried":
		return n + " dead job(s) sent back to the queue."
	case "dlq_discarded":
		return n + " dead job(s) discarded."
	case "triggered":
		return "Recurring job triggered."
	case "trigger_queued":
		return "Trigger queued: it runs when the previous run ends."
	case "enqueued":
		return "Job enqueued."
	case "unique_held":
		return "Nothing enqueued: this unfinished job holds its unique key."
	case "queue_paused":
		return "Queue paused: workers start none of its jobs until it is resumed."
	case "queue_resumed":
		return "Queue resumed."
	case "queue_limits":
		return "Queue limits set: every worker's claims obey them."
	}
	return ""
}
