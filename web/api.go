package web

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/queuectl/queuectl/internal/supervise"
	"github.com/queuectl/queuectl/internal/view"
	"github.com/queuectl/queuectl/queue"
	"github.com/queuectl/queuectl/scheduler"
)

const (
	defaultPage = 50
	maxPage     = 500
	maxSearch   = 200
	nextFires   = 5
	hiddenValue = "(hidden)"
)

func (s *Server) apiStatus(_ http.ResponseWriter, r *http.Request) (any, error) {
	return s.status(r.Context())
}

func (s *Server) status(ctx context.Context) (view.Status, error) {
	counts, err := s.cfg.Store.CountJobs(ctx)
	if err != nil {
		return view.Status{}, err
	}
	scheduled, err := s.cfg.Store.CountScheduled(ctx, s.now())
	if err != nil {
		return view.Status{}, err
	}
	ws, err := s.cfg.Store.ListWorkers(ctx)
	if err != nil {
		return view.Status{}, err
	}
	controls, err := s.cfg.Store.QueueControls(ctx)
	if err != nil {
		return view.Status{}, err
	}
	now, err := supervise.HeartbeatNow(ctx, s.cfg.Store, s.now())
	if err != nil {
		return view.Status{}, err
	}
	alive := 0
	for _, w := range ws {
		if view.Heard(w, now) {
			alive++
		}
	}
	return view.NewStatus(counts, scheduled, alive).WithPaused(controls), nil
}

func (s *Server) apiStats(_ http.ResponseWriter, r *http.Request) (any, error) {
	window := 24 * time.Hour
	if v := r.URL.Query().Get("since"); v != "" {
		d, err := queue.ParseDuration(v)
		if err != nil || d < time.Second || d > 31*24*time.Hour {
			return nil, &apiError{Status: http.StatusBadRequest, Code: codeInvalid, Field: "since",
				Message: fmt.Sprintf("since %q: use a duration from 1s to 31d, such as 24h", v)}
		}
		window = d
	}
	return s.stats(r.Context(), window)
}

func (s *Server) stats(ctx context.Context, window time.Duration) (view.Stats, error) {
	return view.LoadStats(ctx, s.cfg.Store, window, s.now())
}

// listParams reads the job list's filters: state, queue, q (text in the id
// or command), label (key=value, repeatable), limit and after (the cursor).
func listParams(q url.Values, now time.Time) (queue.ListParams, error) {
	p := queue.ListParams{Queue: q.Get("queue"), Search: q.Get("q"), After: q.Get("after"), Limit: defaultPage}
	bad := func(field, format string, a ...any) error {
		return &apiError{Status: http.StatusBadRequest, Code: codeInvalid, Field: field, Message: fmt.Sprintf(format, a...)}
	}
	if st := q.Get("state"); st != "" {
		if err := view.FilterState(&p, st, now); err != nil {
			return p, bad("state", "%s", err)
		}
	}
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > maxPage {
			return p, bad("limit", "limit %q: must be from 1 to %d", v, maxPage)
		}
		p.Limit = n
	}
	if len(p.Search) > maxSearch {
		return p, bad("q", "q: at most %d bytes", maxSearch)
	}
	// An empty label= is no filter, as an empty q= or queue= is.
	labels, err := queue.ParseLabels(slices.DeleteFunc(slices.Clone(q["label"]), func(l string) bool { return l == "" }))
	if err != nil {
		return p, bad("label", "%s", err)
	}
	p.Labels = labels
	return p, nil
}

// listFilterNames refuses a parameter the list does not take, and one
// of its single-valued ones given twice: dropped, ?stat=dead or
// ?Queue=reports would answer every job, which a script then retries or
// discards one by one. (The dashboard's page keeps its own parameters.)
func listFilterNames(q url.Values) error {
	for name, v := range q {
		switch name {
		case "label":
		case "state", "queue", "q", "limit", "after":
			if len(v) > 1 {
				return invalidField(name, "%s is given %d times: give it once", name, len(v))
			}
		default:
			return invalidField(name, "unknown parameter %q: the list takes state, queue, q, label, limit and after", name)
		}
	}
	return nil
}

// listJobs returns a page of jobs and the cursor of the next page ("" on
// the last page).
func (s *Server) listJobs(ctx context.Context, p queue.ListParams) ([]*queue.Job, string, error) {
	p.Limit++ // one more tells whether a next page exists
	jobs, err := s.cfg.Store.ListJobs(ctx, p)
	if errors.Is(err, queue.ErrNotFound) && p.After != "" {
		return nil, "", &apiError{Status: http.StatusBadRequest, Code: codeInvalid, Field: "after",
			Message: fmt.Sprintf("cursor %q: no such job (deleted meanwhile?); start from the first page", p.After)}
	}
	if err != nil {
		return nil, "", err
	}
	if len(jobs) < p.Limit {
		return jobs, "", nil
	}
	jobs = jobs[:p.Limit-1]
	return jobs, jobs[len(jobs)-1].ID, nil
}

// apiListJobs answers the same array as `queuectl list --json`; the next
// page's URL is in the Link header (rel="next").
func (s *Server) apiListJobs(w http.ResponseWriter, r *http.Request) (any, error) {
	if err := listFilterNames(r.URL.Query()); err != nil {
		return nil, err
	}
	p, err := listParams(r.URL.Query(), s.now())
	if err != nil {
		return nil, err
	}
	jobs, next, err := s.listJobs(r.Context(), p)
	if err != nil {
		return nil, err
	}
	if next != "" {
		q := r.URL.Query()
		q.Set("after", next)
		w.Header().Set("Link", fmt.Sprintf(`</api/v1/jobs?%s>; rel="next"`, q.Encode()))
	}
	return view.Jobs(jobs), nil
}

func (s *Server) apiGetJob(_ http.ResponseWriter, r *http.Request) (any, error) {
	return s.jobDetail(r.Context(), r.PathValue("id"), identityOf(r).role)
}

// jobDetail is a job with its history; environment values only for admins.
func (s *Server) jobDetail(ctx context.Context, id string, rl role) (view.JobDetail, error) {
	j, err := s.cfg.Store.GetJob(ctx, id)
	if err != nil {
		return view.JobDetail{}, err
	}
	hist, err := s.cfg.Store.Attempts(ctx, id)
	if err != nil {
		return view.JobDetail{}, err
	}
	d := view.NewJobDetail(j, hist)
	if len(j.Env) > 0 {
		d.Env = make(map[string]string, len(j.Env))
		for k, v := range j.Env {
			if rl < roleAdmin {
				v = hiddenValue
			}
			d.Env[k] = v
		}
	}
	return d, nil
}

// queryNumber reads ?name=N, a number from 1: 0 when absent or zero (a
// word that means the default); help says what a bad one should be.
func queryNumber(q url.Values, name, zero, help string) (int, error) {
	v := q.Get(name)
	if v == "" || v == zero {
		return 0, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		return 0, &apiError{Status: http.StatusBadRequest, Code: codeInvalid, Field: name, Message: fmt.Sprintf("%s %q: %s", name, v, help)}
	}
	return n, nil
}

// apiOutput answers an attempt's captured output as it was written (like
// `queuectl output`), as text/plain that a browser will not interpret.
func (s *Server) apiOutput(w http.ResponseWriter, r *http.Request) (any, error) {
	// ?attempt=N names the latest attempt numbered N; ?nth=K the K-th of
	// the job's history (numbers start over when a dead job is retried).
	n, err := queryNumber(r.URL.Query(), "attempt", "latest", "a number from 1, or latest")
	if err != nil {
		return nil, err
	}
	nth, err := queryNumber(r.URL.Query(), "nth", "", "a place in the history from 1 (the oldest attempt)")
	if err != nil {
		return nil, err
	}
	var at *queue.Attempt
	switch {
	case n > 0 && nth > 0:
		return nil, &apiError{Status: http.StatusBadRequest, Code: codeInvalid, Field: "nth",
			Message: "attempt and nth each name an attempt: give one"}
	case nth > 0:
		at, err = s.cfg.Store.OutputAt(r.Context(), r.PathValue("id"), nth-1)
	default:
		at, err = s.cfg.Store.Output(r.Context(), r.PathValue("id"), n)
	}
	if err != nil {
		return nil, err
	}
	h := w.Header()
	h.Set("Content-Type", "text/plain; charset=utf-8")
	h.Set("Content-Security-Policy", "sandbox; default-src 'none'")
	h.Set("X-Attempt", strconv.Itoa(at.Number))
	h.Set("X-Output-Dropped-Bytes", strconv.FormatInt(at.Dropped, 10))
	w.WriteHeader(http.StatusOK)
	w.Write(at.Output)
	return written{}, nil
}

// written tells api that the handler wrote the answer itself.
type written struct{}

func (s *Server) apiQueues(_ http.ResponseWriter, r *http.Request) (any, error) {
	return s.queues(r.Context())
}

func (s *Server) queues(ctx context.Context) ([]view.Queue, error) {
	return view.LoadQueues(ctx, s.cfg.Store, s.now())
}

func (s *Server) apiCron(_ http.ResponseWriter, r *http.Request) (any, error) {
	ts, err := s.cfg.Store.Templates(r.Context())
	if err != nil {
		return nil, err
	}
	return view.CronTemplates(ts, s.now(), nextFires), nil
}

func (s *Server) apiWorkers(_ http.ResponseWriter, r *http.Request) (any, error) {
	ws, err := s.cfg.Store.ListWorkers(r.Context())
	return view.Workers(ws), err
}

// apiEnqueue takes the JSON `queuectl enqueue` takes, with the same
// validation, and answers the stored job (201), or the job that holds its
// unique key (200).
func (s *Server) apiEnqueue(_ http.ResponseWriter, r *http.Request) (any, error) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return nil, err
	}
	added, err := s.enqueue(r, body)
	if err != nil {
		return nil, err
	}
	if id := added[0].ExistingID; id != "" { // its unique key is held: 200 with that job
		return s.cfg.Store.GetJob(r.Context(), id)
	}
	return created{added[0]}, nil
}

// enqueue parses one job's JSON and enqueues it with the queue's settings:
// the API and the dashboard's form share it. Requests that arrive while
// another's jobs are being stored are stored together, in one transaction
// (queue.CoalesceInserts).
func (s *Server) enqueue(r *http.Request, body []byte) ([]*queue.Job, error) {
	now := s.now()
	n, err := view.ParseJobJSON(body, now)
	if err != nil {
		return nil, err
	}
	overrides, err := queue.QueueOverrides(r.Context(), s.cfg.Store)
	if err != nil {
		return nil, err
	}
	added, err := queue.Enqueue(r.Context(), s.inserts, overrides, []queue.NewJob{n}, now)
	if err != nil {
		return nil, fieldOf(err)
	}
	if added[0].ExistingID != "" {
		return added, nil
	}
	s.cfg.Log.Info().Str("job_id", added[0].ID).Str("queue", added[0].Queue).Msg("job enqueued over http")
	return added, nil
}

// fieldOf names the job field a validation error of the queue package is
// about, so the API's 400 says which field is wrong: those messages start
// with the field's JSON name ("invalid: queue \"a b\" contains white space"),
// after the job's id when the store names it (queue.JobError), and a
// label's say "label", as the CLI's flag.
func fieldOf(err error) error {
	if !errors.Is(err, queue.ErrInvalid) {
		return err
	}
	cause := err
	if je := (*queue.JobError)(nil); errors.As(err, &je) {
		cause = je.Err
	}
	msg := strings.TrimPrefix(cause.Error(), queue.ErrInvalid.Error()+": ")
	word, _, _ := strings.Cut(msg, " ")
	field := strings.TrimSuffix(word, ":")
	if field == "label" {
		field = "labels"
	}
	if view.JobFields[field] {
		return &view.SpecError{Field: field, Msg: err.Error()}
	}
	return err
}

// idsResult answers an action: the ids of the jobs it changed.
type idsResult struct {
	IDs []string `json:"ids"`
}

func ids(v []string) idsResult {
	if v == nil {
		v = []string{}
	}
	return idsResult{v}
}

func (s *Server) apiRetry(_ http.ResponseWriter, r *http.Request) (any, error) {
	moved, err := s.cfg.Store.RetryJobs(r.Context(), queue.RetryParams{IDs: []string{r.PathValue("id")}, Now: s.now()})
	return ids(moved), err
}

// cancelResult answers a cancel: a running job stops when its worker acts.
type cancelResult struct {
	ID              string      `json:"id"`
	Was             queue.State `json:"was"`
	CancelRequested bool        `json:"cancel_requested"`
}

func (s *Server) apiCancel(_ http.ResponseWriter, r *http.Request) (any, error) {
	id := r.PathValue("id")
	was, err := s.cfg.Store.CancelJob(r.Context(), id, s.now())
	return cancelResult{ID: id, Was: was, CancelRequested: was == queue.StateProcessing}, err
}

func (s *Server) apiDiscard(_ http.ResponseWriter, r *http.Request) (any, error) {
	gone, err := s.cfg.Store.DiscardJobs(r.Context(), queue.DiscardParams{IDs: []string{r.PathValue("id")}})
	return ids(gone), err
}

// apiDLQRetry retries every dead job, or those of ?queue=NAME.
func (s *Server) apiDLQRetry(_ http.ResponseWriter, r *http.Request) (any, error) {
	q, err := dlqQueue(r)
	if err != nil {
		return nil, err
	}
	moved, err := s.cfg.Store.RetryJobs(r.Context(), queue.RetryParams{AllDead: true, Queue: q, Now: s.now()})
	return ids(moved), err
}

// apiDLQDiscard deletes every dead job, or those of ?queue=NAME.
func (s *Server) apiDLQDiscard(_ http.ResponseWriter, r *http.Request) (any, error) {
	q, err := dlqQueue(r)
	if err != nil {
		return nil, err
	}
	gone, err := s.cfg.Store.DiscardJobs(r.Context(), queue.DiscardParams{AllDead: true, Queue: q})
	return ids(gone), err
}

// dlqQueue is the queue a DLQ action is limited to ("" for every queue).
// These actions change every dead job their filter lets through, so a
// filter that cannot be what the caller meant is refused rather than
// dropped: a parameter of another name (?Queue=, ?queu=), an empty
// queue= (?queue=$QUEUE with the variable unset), the queue given twice,
// or a name no queue can have. So is a body (other than an empty one or
// {}): the filter is a query parameter, and a body's queue=NAME (the
// field the dashboard's form posts) or {"queue": "NAME"} would otherwise
// be dropped unread.
func dlqQueue(r *http.Request) (string, error) {
	const most = 64 << 10
	body, err := io.ReadAll(io.LimitReader(r.Body, most+1))
	if err != nil {
		return "", err
	}
	if b := strings.TrimSpace(string(body)); len(body) > most || b != "" && b != "{}" {
		return "", invalidField("body", "a body is not read here: give the queue as ?queue=NAME, or leave it out for every queue")
	}
	q := r.URL.Query()
	for name := range q {
		if name != "queue" {
			return "", invalidField(name, "unknown parameter %q: the only one is queue", name)
		}
	}
	v, ok := q["queue"]
	if !ok {
		return "", nil
	}
	if len(v) != 1 {
		return "", invalidField("queue", "queue is given %d times: give it once, or leave it out for every queue", len(v))
	}
	if err := queue.CheckName("queue", v[0]); err != nil {
		return "", invalidField("queue", "%s (leave queue out for every queue)", strings.TrimPrefix(err.Error(), queue.ErrInvalid.Error()+": "))
	}
	return v[0], nil
}

// triggerResult answers a trigger, like `queuectl cron trigger`.
type triggerResult struct {
	Fired  bool   `json:"fired"`
	JobID  string `json:"job_id,omitempty"`
	Queued bool   `json:"queued"` // waits for the previous run (overlap = queue)
}

func (s *Server) apiTrigger(_ http.ResponseWriter, r *http.Request) (any, error) {
	return s.trigger(r.Context(), r.PathValue("name"))
}

func (s *Server) trigger(ctx context.Context, name string) (triggerResult, error) {
	ts, err := s.cfg.Store.Templates(ctx)
	if err != nil {
		return triggerResult{}, err
	}
	for _, t := range ts {
		if t.Name != name {
			continue
		}
		d, err := scheduler.LoadDefaults(ctx, s.cfg.Store)
		if err != nil {
			return triggerResult{}, err
		}
		now := s.now()
		res, err := scheduler.Fire(ctx, s.cfg.Store, t, d, queue.FireManual, now, now, nil)
		if err != nil {
			return triggerResult{}, err
		}
		if !res.Fired && !res.Queued {
			return triggerResult{}, fmt.Errorf("%s not triggered: %s: %w", name, res.Why(t.Overlap), queue.ErrConflict)
		}
		s.cfg.Log.Info().Str("template", name).Str("job_id", res.JobID).Bool("queued", res.Queued).Msg("recurring job triggered over http")
		return triggerResult{Fired: res.Fired, JobID: res.JobID, Queued: res.Queued}, nil
	}
	return triggerResult{}, fmt.Errorf("recurring job %q: %w", name, queue.ErrNotFound)
}
