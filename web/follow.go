package web

import (
	"context"
	"io"
	"net/http"
	"time"

	"github.com/queuectl/queuectl/queue"
)

// outputHandler serves GET /api/v1/jobs/{id}/output: an attempt's recorded
// output, or with ?follow=1 the running attempt's output as it is printed
// (followOutput). Both need the viewer role.
func (s *Server) outputHandler() http.Handler {
	recorded := s.api(roleViewer, s.apiOutput)
	follow := s.need(roleViewer, http.HandlerFunc(s.followOutput))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if f := r.URL.Query().Get("follow"); f != "" && f != "0" && f != "false" {
			follow.ServeHTTP(w, r)
			return
		}
		recorded.ServeHTTP(w, r)
	})
}

// followOutput streams a job's output as text/plain, like `queuectl output
// -f`: a running attempt's from its start, a pending job's attempt once it
// starts, each write flushed; the answer ends when that attempt ends, with
// the rest of its recorded output. A job neither running nor pending
// answers its latest attempt's output at once. Workers save a running
// attempt's output about once a second (queue.Follow). The answer ends,
// cut short, when its session is signed out.
func (s *Server) followOutput(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	for _, name := range []string{"attempt", "nth"} {
		if r.URL.Query().Has(name) {
			s.fail(w, r, &apiError{Status: http.StatusBadRequest, Code: codeInvalid, Field: name,
				Message: "follow takes no " + name + ": it follows the running attempt"})
			return
		}
	}
	signedIn, signedOut := s.whileSignedIn(r)
	defer signedOut()
	ctx, cancel := context.WithTimeout(signedIn, eventMaxLife)
	defer cancel()
	j, err := s.streamedJob(ctx, id)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	h := w.Header()
	h.Set("Content-Type", "text/plain; charset=utf-8")
	h.Set("Content-Security-Policy", "sandbox; default-src 'none'")
	h.Set("X-Accel-Buffering", "no")
	h.Set("X-Job-State", string(j.State))
	w.WriteHeader(http.StatusOK)
	if r.Method == http.MethodHead {
		return // the headers are the answer: the stream would go on unseen
	}
	out := &flushWriter{w: w, rc: http.NewResponseController(w)}
	if out.flush() != nil {
		return
	}
	remainder := s.cfg.Remainder
	if remainder == nil {
		remainder = func(output []byte, _, seen int64) []byte { return output[min(seen, int64(len(output))):] }
	}
	_, err = queue.Follow(ctx, boundedReads{s.cfg.Store}, queue.FollowParams{JobID: id, Out: out, Remainder: remainder})
	if err != nil && ctx.Err() == nil && !out.failed {
		// The status is sent: the truncated answer is all the client learns.
		s.cfg.Log.Warn().Err(err).Str("job_id", id).Msg("follow output failed")
	}
}

// boundedReads gives each job read of a follower the deadline of a
// request's store calls: a database that stops answering ends the
// followed output rather than hang it with nothing sent. Its subscription
// to job events lasts.
type boundedReads struct{ queue.Store }

func (b boundedReads) GetJob(ctx context.Context, id string) (*queue.Job, error) {
	ctx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	return b.Store.GetJob(ctx, id)
}

func (b boundedReads) LiveOutput(ctx context.Context, jobID string) (*queue.LiveOutput, error) {
	ctx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	return b.Store.LiveOutput(ctx, jobID)
}

func (b boundedReads) Output(ctx context.Context, jobID string, number int) (*queue.Attempt, error) {
	ctx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	return b.Store.Output(ctx, jobID, number)
}

// flushWriter sends each write to the client at once.
type flushWriter struct {
	w      io.Writer
	rc     *http.ResponseController
	failed bool // the client is gone
}

func (f *flushWriter) Write(b []byte) (int, error) {
	f.rc.SetWriteDeadline(time.Now().Add(30 * time.Second))
	n, err := f.w.Write(b)
	if err == nil {
		err = f.flush()
	}
	f.failed = f.failed || err != nil
	return n, err
}

func (f *flushWriter) flush() error {
	f.rc.SetWriteDeadline(time.Now().Add(30 * time.Second))
	err := f.rc.Flush()
	f.failed = f.failed || err != nil
	return err
}
