package web

import (
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/queuectl/queuectl/internal/supervise"
	"github.com/queuectl/queuectl/internal/view"
	"github.com/queuectl/queuectl/queue"
)

func (s *Server) pageRoutes(mux *http.ServeMux) {
	mux.Handle("GET /static/", s.pages.static)
	mux.HandleFunc("GET /login", s.loginPage)
	mux.HandleFunc("POST /login", s.login)
	mux.HandleFunc("POST /logout", s.logout)
	mux.Handle("GET /{$}", s.view(s.overviewPage))
	mux.Handle("GET /jobs", s.view(s.jobsPage))
	mux.Handle("GET /enqueue", s.pageAs(roleAdmin, s.enqueuePage))
	mux.Handle("POST /enqueue", s.pageAs(roleAdmin, s.enqueueAction))
	mux.Handle("GET /jobs/{id}", s.view(s.jobPage))
	mux.Handle("GET /dlq", s.view(s.dlqPage))
	mux.Handle("GET /cron", s.view(s.cronPage))
	mux.Handle("GET /workers", s.view(s.workersPage))
	mux.Handle("POST /jobs/{id}/retry", s.action(s.retryAction))
	mux.Handle("POST /jobs/{id}/cancel", s.action(s.cancelAction))
	mux.Handle("POST /jobs/{id}/discard", s.action(s.discardAction))
	mux.Handle("POST /dlq/retry", s.action(s.dlqRetryAction))
	mux.Handle("POST /dlq/discard", s.action(s.dlqDiscardAction))
	mux.Handle("POST /cron/{name}/trigger", s.action(s.triggerAction))
	mux.Handle("POST /queues/{name}/pause", s.action(s.pauseAction))
	mux.Handle("POST /queues/{name}/resume", s.action(s.resumeAction))
	mux.Handle("POST /queues/{name}/limits", s.action(s.limitsAction))
	notFound := s.view(func(http.ResponseWriter, *http.Request) error {
		return errorf(http.StatusNotFound, codeNotFound, "There is no such page.")
	})
	// A path served under other methods (a page, /metrics, the health
	// checks, which need no token) answers 405 naming them, as the API
	// does, before any token is asked for.
	mux.Handle("/", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if allow := allowedMethods(mux, r); allow != "" {
			w.Header().Set("Allow", allow)
			s.fail(w, r, errorf(http.StatusMethodNotAllowed, codeMethodNotAllowed, "%s takes %s", r.URL.Path, allow))
			return
		}
		notFound.ServeHTTP(w, r)
	}))
}

type overviewData struct {
	Status     view.Status
	Queues     []view.Queue
	Workers    []*queue.WorkerInfo
	Alive      int
	Running    int
	Range      chartRange
	Ranges     []chartRange
	Throughput any
	Failures   any
	RunTimes   any
	Totals     bucketStats
}

func (s *Server) overviewPage(w http.ResponseWriter, r *http.Request) error {
	ctx := r.Context()
	rg := chartRanges[0]
	for _, c := range chartRanges {
		if c.Key == r.URL.Query().Get("range") {
			rg = c
		}
	}
	d := overviewData{Range: rg, Ranges: chartRanges}
	var err error
	if d.Status, err = s.status(ctx); err != nil {
		return err
	}
	if d.Queues, err = s.queues(ctx); err != nil {
		return err
	}
	if d.Workers, err = s.cfg.Store.ListWorkers(ctx); err != nil {
		return err
	}
	now := s.now()
	heard, err := supervise.HeartbeatNow(ctx, s.cfg.Store, now)
	if err != nil {
		return err
	}
	for _, w := range d.Workers {
		if view.Heard(w, heard) {
			d.Alive++
			d.Running += len(w.CurrentJobs)
		}
	}
	runs, err := s.cfg.Store.RunTimes(ctx, chartRunTimes(rg, now))
	if err != nil {
		return err
	}
	buckets := bucketize(runs, rg, now)
	for _, b := range buckets {
		d.Totals.Succeeded += b.Succeeded
		d.Totals.Failed += b.Failed
	}
	d.Throughput, d.Failures, d.RunTimes = throughputChart(buckets, rg), failureChart(buckets, rg), runTimeChart(buckets, rg)
	s.render(w, r, http.StatusOK, "overview", page{Title: "Overview", Nav: "overview", Data: d})
	return nil
}

type jobsData struct {
	Jobs   []*queue.Job
	Next   string
	Filter queue.ListParams
	State  string
	Labels []string // the label filters, key=value, as the address has them
	Limit  string   // the page size the address asks for ("": the default)
	Queues []string
	States []queue.State
	Paged  bool
}

func (s *Server) jobsPage(w http.ResponseWriter, r *http.Request) error {
	q := r.URL.Query()
	q["label"] = formLabels(q["label"])
	p, err := listParams(q, s.now())
	if err != nil {
		return err
	}
	d := jobsData{Filter: p, State: q.Get("state"), Labels: q["label"], Limit: q.Get("limit"),
		States: view.StatusStates(), Paged: p.After != ""}
	if d.Jobs, d.Next, err = s.listJobs(r.Context(), p); err != nil {
		return err
	}
	st, err := s.status(r.Context())
	if err != nil {
		return err
	}
	d.Queues = st.QueueNames()
	// As on the dead-letter page: the queue shown stays in the filter.
	if p.Queue != "" && !slices.Contains(d.Queues, p.Queue) {
		d.Queues = append(d.Queues, p.Queue)
	}
	s.render(w, r, http.StatusOK, "jobs", page{Title: "Jobs", Nav: "jobs", Data: d})
	return nil
}

// formLabels are the jobs page's label filters: those applied, then the
// one typed in the form's field, trimmed. An empty field adds none, and a
// key typed again replaces its filter (a job holds one value per key).
func formLabels(items []string) []string {
	var out []string
	for _, l := range items {
		if l = strings.TrimSpace(l); l == "" {
			continue
		}
		key, _, _ := strings.Cut(l, "=")
		out = slices.DeleteFunc(out, func(o string) bool { k, _, _ := strings.Cut(o, "="); return k == key })
		out = append(out, l)
	}
	return out
}

type jobData struct {
	Job     *queue.Job
	Detail  view.JobDetail
	Outputs []attemptOutput
	Live    bool
	Running *liveEvent // the running attempt's output so far
	Held    bool       // left out: the page's event stream holds it
	Older   int        // the oldest attempts, whose output the page leaves out
}

type attemptOutput struct {
	Attempt *queue.Attempt
	Nth     int // its place in the history, 1 the oldest: attempt numbers start over when a dead job is retried
	Text    string
	Dropped int64
	Last    bool
}

func (s *Server) jobPage(w http.ResponseWriter, r *http.Request) error {
	ctx := r.Context()
	id := r.PathValue("id")
	j, err := s.cfg.Store.GetJob(ctx, id)
	if err != nil {
		return err
	}
	d := jobData{Job: j, Live: !j.State.Finished()}
	if d.Detail, err = s.jobDetail(ctx, id, identityOf(r).role); err != nil {
		return err
	}
	// A page refreshed beside an event stream that holds this attempt's
	// output gets the panel without it (app.js).
	if held := r.Header.Get("X-Live-Held"); held != "" && held == strconv.Itoa(j.Attempts) && j.State == queue.StateProcessing {
		d.Held = true
	} else if d.Running, err = s.liveOutput(ctx, j); err != nil {
		return err
	}
	// The newest attempts first, their output cleaned of terminal escapes.
	for i := len(d.Detail.History) - 1; i >= 0 && len(d.Outputs) < 20; i-- {
		a := d.Detail.History[i]
		out, err := s.cfg.Store.OutputAt(ctx, id, i)
		if err != nil {
			return err
		}
		d.Outputs = append(d.Outputs, attemptOutput{Attempt: a, Nth: i + 1, Text: cleanOutput(out.Output), Dropped: out.Dropped, Last: i == len(d.Detail.History)-1})
	}
	d.Older = len(d.Detail.History) - len(d.Outputs)
	s.render(w, r, http.StatusOK, "job", page{Title: "Job " + id, Nav: "jobs", Data: d})
	return nil
}

type dlqData struct {
	Jobs   []*queue.Job
	Next   string
	Queue  string
	Queues []string
	Total  int
	Paged  bool
	First  string // the first page of this queue's dead jobs, where a bulk action leads
}

func (s *Server) dlqPage(w http.ResponseWriter, r *http.Request) error {
	q := r.URL.Query()
	p := queue.ListParams{States: []queue.State{queue.StateDead}, Queue: q.Get("queue"), After: q.Get("after"), Limit: defaultPage}
	d := dlqData{Queue: p.Queue, Paged: p.After != "", First: "/dlq"}
	if p.Queue != "" {
		d.First += "?" + url.Values{"queue": {p.Queue}}.Encode()
	}
	var err error
	if d.Jobs, d.Next, err = s.listJobs(r.Context(), p); err != nil {
		return err
	}
	st, err := s.status(r.Context())
	if err != nil {
		return err
	}
	for _, name := range st.QueueNames() {
		if n := st.Queues[name][queue.StateDead]; n > 0 {
			d.Queues = append(d.Queues, name)
			if p.Queue == "" || p.Queue == name {
				d.Total += n
			}
		}
	}
	// The queue shown stays in the filter, dead jobs or not (after Retry
	// all, say): else the filter reads "All queues", and choosing that
	// changes nothing.
	if p.Queue != "" && !slices.Contains(d.Queues, p.Queue) {
		d.Queues = append(d.Queues, p.Queue)
	}
	s.render(w, r, http.StatusOK, "dlq", page{Title: "Dead letters", Nav: "dlq", Data: d})
	return nil
}

func (s *Server) cronPage(w http.ResponseWriter, r *http.Request) error {
	ts, err := s.cfg.Store.Templates(r.Context())
	if err != nil {
		return err
	}
	s.render(w, r, http.StatusOK, "cron", page{Title: "Cron", Nav: "cron", Data: view.CronTemplates(ts, s.now(), nextFires)})
	return nil
}

type workersData struct {
	Workers []*queue.WorkerInfo
	Queues  []view.Queue
	Alive   int
	Now     time.Time // the clock heartbeats are judged by (supervise.HeartbeatNow)
}

func (s *Server) workersPage(w http.ResponseWriter, r *http.Request) error {
	ws, err := s.cfg.Store.ListWorkers(r.Context())
	if err != nil {
		return err
	}
	qs, err := s.queues(r.Context())
	if err != nil {
		return err
	}
	slices.SortFunc(ws, func(a, b *queue.WorkerInfo) int { return a.StartedAt.Compare(b.StartedAt) })
	now, err := supervise.HeartbeatNow(r.Context(), s.cfg.Store, s.now())
	if err != nil {
		return err
	}
	d := workersData{Workers: ws, Queues: qs, Now: now}
	for _, w := range ws {
		if view.Heard(w, now) {
			d.Alive++
		}
	}
	s.render(w, r, http.StatusOK, "workers", page{Title: "Workers and queues", Nav: "workers", Data: d})
	return nil
}

func done(code string, n int) url.Values {
	v := url.Values{"done": {code}}
	if n >= 0 {
		v.Set("n", strconv.Itoa(n))
	}
	return v
}

func (s *Server) retryAction(r *http.Request) (url.Values, error) {
	_, err := s.cfg.Store.RetryJobs(r.Context(), queue.RetryParams{IDs: []string{r.PathValue("id")}, Now: s.now()})
	s.audit(r, "retry", r.PathValue("id"), err)
	return done("retried", -1), err
}

func (s *Server) cancelAction(r *http.Request) (url.Values, error) {
	was, err := s.cfg.Store.CancelJob(r.Context(), r.PathValue("id"), s.now())
	s.audit(r, "cancel", r.PathValue("id"), err)
	if was == queue.StateProcessing {
		return done("cancel_requested", -1), err
	}
	return done("cancelled", -1), err
}

func (s *Server) discardAction(r *http.Request) (url.Values, error) {
	_, err := s.cfg.Store.DiscardJobs(r.Context(), queue.DiscardParams{IDs: []string{r.PathValue("id")}})
	s.audit(r, "discard", r.PathValue("id"), err)
	return done("discarded", -1), err
}

func (s *Server) dlqRetryAction(r *http.Request) (url.Values, error) {
	moved, err := s.cfg.Store.RetryJobs(r.Context(), queue.RetryParams{AllDead: true, Queue: r.PostFormValue("queue"), Now: s.now()})
	s.audit(r, "dlq retry", r.PostFormValue("queue"), err)
	return done("dlq_retried", len(moved)), err
}

func (s *Server) dlqDiscardAction(r *http.Request) (url.Values, error) {
	gone, err := s.cfg.Store.DiscardJobs(r.Context(), queue.DiscardParams{AllDead: true, Queue: r.PostFormValue("queue")})
	s.audit(r, "dlq discard", r.PostFormValue("queue"), err)
	return done("dlq_discarded", len(gone)), err
}

func (s *Server) triggerAction(r *http.Request) (url.Values, error) {
	name := r.PathValue("name")
	res, err := s.trigger(r.Context(), name)
	s.audit(r, "trigger", name, err)
	if res.Queued {
		return done("trigger_queued", -1), err
	}
	v := done("triggered", -1)
	v.Set("job", res.JobID) // the flash links the job it added
	return v, err
}

func (s *Server) pauseAction(r *http.Request) (url.Values, error) {
	err := s.steerFromPage(r, "pause", queue.ControlUpdate{Paused: ptr(true)})
	return done("queue_paused", -1), err
}

func (s *Server) resumeAction(r *http.Request) (url.Values, error) {
	err := s.steerFromPage(r, "resume", queue.ControlUpdate{Paused: ptr(false)})
	return done("queue_resumed", -1), err
}

// steerFromPage applies u to the queue named in the path, as the API
// does, and logs the action.
func (s *Server) steerFromPage(r *http.Request, action string, u queue.ControlUpdate) error {
	name, err := s.steer(r, u)
	s.audit(r, action, name, err, controlFields(u))
	return err
}

// limitsAction sets a queue's global limits from the form of the queues
// table, as queue set and PUT /api/v1/queues/{name}/limits do: an empty
// field is no limit.
func (s *Server) limitsAction(r *http.Request) (url.Values, error) {
	n := 0 // an empty field: no limit
	if text := strings.TrimSpace(r.PostFormValue("max_running")); text != "" {
		var err error
		if n, err = maxRunningFrom(text, strconv.Quote(text)); err != nil {
			return nil, err
		}
	}
	rate, err := parseRate(r.PostFormValue("rate_limit"))
	if err != nil {
		return nil, err
	}
	err = s.steerFromPage(r, "limits", queue.ControlUpdate{MaxRunning: &n, Rate: &rate})
	return done("queue_limits", -1), err
}

// audit logs an action taken from the dashboard, with the fields of
// what it set, if any.
func (s *Server) audit(r *http.Request, action, target string, err error, fields ...map[string]any) {
	ev := s.cfg.Log.Info()
	if err != nil {
		ev = s.cfg.Log.Warn().Err(err)
	}
	for _, f := range fields {
		ev = ev.Fields(f)
	}
	ev.Str("action", action).Str("target", target).Str("remote", clientAddr(r)).Msg("dashboard action")
}

// since is a short relative age such as "3m ago".
func since(now, t time.Time) string {
	if t.IsZero() {
		return "—"
	}
	d := now.Sub(t)
	future := d < 0
	if future {
		d = -d
	}
	var s string
	switch {
	case d < time.Second:
		return "now"
	case d < time.Minute:
		s = strconv.Itoa(int(d.Seconds())) + "s"
	case d < time.Hour:
		s = strconv.Itoa(int(d.Minutes())) + "m"
	case d < 48*time.Hour:
		s = strconv.Itoa(int(d.Hours())) + "h"
	default:
		s = strconv.Itoa(int(d.Hours()/24)) + "d"
	}
	if future {
		return "in " + s
	}
	return s + " ago"
}
