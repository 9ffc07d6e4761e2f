package web

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
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
// shows it.
func (s *Server) queueResult(ctx context.Context, name string) (view.Queue, error) {
	qs, err := view.LoadQueues(ctx, s.cfg.Store, s.now())
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
// field keeps its limit, 0 or "0" removes it.
type limitsRequest struct {
	MaxRunning *int    `json:"max_running"`
	RateLimit  *string `json:"rate_limit"`
}

func (s *Server) apiQueueLimits(_ http.ResponseWriter, r *http.Request) (any, error) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return nil, err
	}
	var req limitsRequest
	if err := json.Unmarshal(body, &req); err != nil {
		return nil, errorf(http.StatusBadRequest, codeInvalid, "body: %v", err)
	}
	u := queue.ControlUpdate{MaxRunning: req.MaxRunning}
	if req.RateLimit != nil {
		rate, err := queue.ParseRateLimit(*req.RateLimit)
		if err != nil {
			return nil, &apiError{Status: http.StatusBadRequest, Code: codeInvalid, Field: "rate_limit", Message: err.Error()}
		}
		u.Rate = &rate
	}
	if u.MaxRunning == nil && u.Rate == nil {
		return nil, errorf(http.StatusBadRequest, codeInvalid, "give max_running or rate_limit")
	}
	return s.steerQueue(r, u)
}

// steerQueue applies u to the queue named in the path.
func (s *Server) steerQueue(r *http.Request, u queue.ControlUpdate) (any, error) {
	name := r.PathValue("name")
	u.Names = []string{name}
	if err := s.cfg.Store.UpdateQueueControls(r.Context(), u); err != nil {
		return nil, err
	}
	s.cfg.Log.Info().Str("queue", name).Msg("queue controls changed over http")
	return s.queueResult(r.Context(), name)
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
		if err != nil || d <= 0 || d > maxWait {
			return nil, &apiError{Status: http.StatusBadRequest, Code: codeInvalid, Field: "timeout",
				Message: fmt.Sprintf("timeout %q: use a duration from 1ms to %s", v, maxWait)}
		}
		limit = d
	}
	id := r.PathValue("id")
	ctx, cancel := context.WithTimeout(r.Context(), limit)
	defer cancel()
	jobs, err := queue.Wait(ctx, s.cfg.Store, []string{id})
	if errors.Is(err, context.DeadlineExceeded) && r.Context().Err() == nil {
		j, err := s.cfg.Store.GetJob(r.Context(), id)
		return waitResult{Job: j}, err
	}
	if err != nil {
		return nil, err
	}
	return waitResult{Final: true, Job: jobs[0]}, nil
}
