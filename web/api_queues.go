package web

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"reflect"
	"strconv"
	"strings"
	"time"

	"github.com/queuectl/queuectl/internal/duration"
	"github.com/queuectl/queuectl/internal/view"
	"github.com/queuectl/queuectl/queue"
)

// The operator endpoints: pause, resume and limit queues (admins), and wait
// for a job to be final (viewers), as queue pause/resume/set and wait do.

// maxWait bounds GET /api/v1/jobs/{id}/wait: within the API's deadline.
const maxWait = 10 * time.Second

// queueResult answers a queue action with the queue as GET /api/v1/queues
// shows it; a queue that holds no job and whose last control the action
// lifted is no longer listed there, and is answered all the same.
func (s *Server) queueResult(ctx context.Context, name string) (view.Queue, error) {
	qs, err := view.LoadQueues(ctx, s.cfg.Store, s.now(), name)
	if err != nil {
		return view.Queue{}, err
	}
	for _, q := range qs {
		if q.Name == name {
			return q, nil
		}
	}
	return view.Queue{}, fmt.Errorf("queue %q: %w", name, queue.ErrNotFound)
}

func (s *Server) apiPauseQueue(_ http.ResponseWriter, r *http.Request) (any, error) {
	return s.steerQueue(r, queue.ControlUpdate{Paused: ptr(true)})
}

func (s *Server) apiResumeQueue(_ http.ResponseWriter, r *http.Request) (any, error) {
	return s.steerQueue(r, queue.ControlUpdate{Paused: ptr(false)})
}

// limitsRequest is the body of PUT /api/v1/queues/{name}/limits; an absent
// (or null) field keeps its limit, 0 or "0" removes it. The fields are read
// raw so that a number and a numeric string both do, and a bad value is
// reported with its field rather than as a Go decoding error.
type limitsRequest struct {
	MaxRunning json.RawMessage `json:"max_running"` // a whole number or a numeric string
	RateLimit  json.RawMessage `json:"rate_limit"`  // "COUNT/PERIOD", or 0
}

// limitsFields are the members a limits request may have.
var limitsFields = view.FieldNames(reflect.TypeFor[limitsRequest]())

func (s *Server) apiQueueLimits(_ http.ResponseWriter, r *http.Request) (any, error) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return nil, err
	}
	const give = "give max_running or rate_limit"
	var req limitsRequest
	if len(bytes.TrimSpace(body)) > 0 {
		if e := view.DecodeObject(body, &req, limitsFields); e != nil {
			msg := e.Msg
			if e.Field != "" { // an unknown field, or one of the wrong type
				msg += ": " + give
			}
			return nil, invalidField(e.Field, "invalid limits JSON: %s", msg)
		}
	}
	var u queue.ControlUpdate
	if given(req.MaxRunning) {
		n, err := parseMaxRunning(req.MaxRunning)
		if err != nil {
			return nil, err
		}
		u.MaxRunning = &n
	}
	if given(req.RateLimit) {
		rate, err := parseRate(rawText(req.RateLimit)) // of numbers, only 0 will do
		if err != nil {
			return nil, err
		}
		u.Rate = &rate
	}
	if u.MaxRunning == nil && u.Rate == nil {
		return nil, invalidField("", give)
	}
	return s.steerQueue(r, u)
}

// given reports whether a raw field was sent with a value.
func given(raw json.RawMessage) bool { return len(raw) > 0 && string(raw) != "null" }

// rawText is a raw field's text: a string's contents, else the JSON as sent.
func rawText(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return strings.TrimSpace(s)
	}
	return string(raw)
}

// parseMaxRunning reads max_running: a whole number, or one in a string.
func parseMaxRunning(raw json.RawMessage) (int, error) {
	var one bytes.Buffer // the value on one line
	json.Compact(&one, raw)
	return maxRunningFrom(rawText(raw), one.String())
}

// maxRunningFrom reads a max running limit from text; shown is the value
// as the error names it.
func maxRunningFrom(text, shown string) (int, error) {
	n, err := strconv.Atoi(text)
	if err != nil || n < 0 || n > queue.MaxRunningLimit {
		return 0, invalidField("max_running", "max_running %s: must be a whole number from 0 (no limit) to %d", shown, queue.MaxRunningLimit)
	}
	return n, nil
}

// parseRate reads a rate limit such as 10/s ("" or 0: none).
func parseRate(text string) (queue.RateLimit, error) {
	rate, err := queue.ParseRateLimit(text)
	if err != nil {
		return rate, invalidBecause("rate_limit", err)
	}
	return rate, nil
}

// steerQueue applies u to the queue named in the path.
func (s *Server) steerQueue(r *http.Request, u queue.ControlUpdate) (any, error) {
	name, err := s.steer(r, u)
	if err != nil {
		return nil, err
	}
	s.cfg.Log.Info().Str("queue", name).Fields(controlFields(u)).Msg("queue controls changed over http")
	return s.queueResult(r.Context(), name)
}

// steer applies u to the queue named in the path, for the API and the
// pages alike, and returns the name.
func (s *Server) steer(r *http.Request, u queue.ControlUpdate) (string, error) {
	name := r.PathValue("name")
	if err := queue.CheckName("queue name", name); err != nil {
		return name, invalidBecause("name", err)
	}
	u.Names = []string{name}
	if err := s.cfg.Store.UpdateQueueControls(r.Context(), u); err != nil {
		if errors.Is(err, queue.ErrInvalid) { // not a job's fault: no invalid_job
			return name, invalidField("", "%s", err)
		}
		return name, err
	}
	return name, nil
}

// controlFields are the log fields of what u sets: paused, max_running
// (0: no limit) and rate_limit ("": none).
func controlFields(u queue.ControlUpdate) map[string]any {
	f := map[string]any{}
	if u.Paused != nil {
		f["paused"] = *u.Paused
	}
	if u.MaxRunning != nil {
		f["max_running"] = *u.MaxRunning
	}
	if u.Rate != nil {
		f["rate_limit"] = u.Rate.String()
	}
	return f
}

func ptr[T any](v T) *T { return &v }

// waitResult answers GET /api/v1/jobs/{id}/wait.
type waitResult struct {
	Final bool       `json:"final"`
	Job   *queue.Job `json:"job"`
}

// apiWaitJob waits until the job is final, at most ?timeout (default and
// at most 10s), woken by job events; final says whether it is.
func (s *Server) apiWaitJob(_ http.ResponseWriter, r *http.Request) (any, error) {
	limit := maxWait
	if v := r.URL.Query().Get("timeout"); v != "" {
		d, err := duration.Parse(v)
		if err != nil || d < time.Millisecond || d > maxWait {
			return nil, &apiError{Status: http.StatusBadRequest, Code: codeInvalid, Field: "timeout",
				Message: fmt.Sprintf("timeout %q: use a duration from 1ms to %s", v, maxWait)}
		}
		limit = d
	}
	id := r.PathValue("id")
	if r.Method == http.MethodHead { // no body to wait for: the headers at once
		j, err := s.cfg.Store.GetJob(r.Context(), id)
		if err != nil {
			return nil, err
		}
		return waitResult{Final: j.State.Finished(), Job: j}, nil
	}
	waiting, stop := untilShutdown(r) // a shutdown ends the wait as the time running out does
	defer stop()
	ctx, cancel := context.WithTimeout(waiting, limit)
	defer cancel()
	jobs, err := queue.Wait(ctx, s.cfg.Store, []string{id})
	if ctx.Err() != nil && r.Context().Err() == nil {
		j, err := s.cfg.Store.GetJob(r.Context(), id)
		return waitResult{Job: j}, err
	}
	if err != nil {
		return nil, err
	}
	return waitResult{Final: true, Job: jobs[0]}, nil
}
