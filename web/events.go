package web

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/queuectl/queuectl/queue"
)

const (
	eventPoll      = 500 * time.Millisecond
	eventKeepAlive = 15 * time.Second
	eventMaxLife   = time.Hour
)

// outputEvent carries one finished attempt's output in an event stream.
type outputEvent struct {
	Attempt int    `json:"attempt"`
	Output  string `json:"output"`
	Dropped int64  `json:"dropped"`
}

// liveEvent carries the output of the running attempt so far: its last
// 64 KiB, cleaned like every output shown, and the bytes written in all.
type liveEvent struct {
	Attempt int    `json:"attempt"`
	Output  string `json:"output"`
	Written int64  `json:"written"`
}

// newLiveEvent cleans a live output; a tail that starts mid-line starts at
// the next line instead, so no cut escape sequence shows.
func newLiveEvent(l *queue.LiveOutput) liveEvent {
	out := l.Output
	if l.Written > int64(len(out)) {
		if i := bytes.IndexByte(out, '\n'); i >= 0 {
			out = out[i+1:]
		}
	}
	return liveEvent{Attempt: l.Attempt, Output: cleanOutput(out), Written: l.Written}
}

// liveOutput is the job's running attempt's output so far, or nil.
func (s *Server) liveOutput(ctx context.Context, j *queue.Job) (*liveEvent, error) {
	if j.State != queue.StateProcessing {
		return nil, nil
	}
	l, err := s.cfg.Store.LiveOutput(ctx, j.ID)
	if errors.Is(err, queue.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	ev := newLiveEvent(l)
	return &ev, nil
}

// jobEvents streams a job as server-sent events: "job" (its JSON, whenever
// it changes), "live" (the running attempt's output so far, whenever it
// grows; workers save it about once a second), "output" (each attempt's
// whole output as the attempt ends) and "end" once the job is finished.
func (s *Server) jobEvents(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	ctx := r.Context()
	j, err := s.cfg.Store.GetJob(ctx, id)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	rc := http.NewResponseController(w)
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	send := func(event string, v any) bool {
		b, _ := json.Marshal(v)
		rc.SetWriteDeadline(time.Now().Add(30 * time.Second))
		if _, err := fmt.Fprintf(w, "event: %s\ndata: %s\n\n", event, b); err != nil {
			return false
		}
		return rc.Flush() == nil
	}
	sentOutputs := 0
	lastSeen := time.Time{}
	var lastLive liveEvent
	deadline := time.Now().Add(eventMaxLife)
	keepAlive := time.Now().Add(eventKeepAlive)
	for {
		if !j.UpdatedAt.Equal(lastSeen) {
			lastSeen = j.UpdatedAt
			if !send("job", j) {
				return
			}
			hist, err := s.cfg.Store.Attempts(ctx, id)
			if err != nil {
				return
			}
			for ; sentOutputs < len(hist); sentOutputs++ {
				at, err := s.cfg.Store.OutputAt(ctx, id, sentOutputs)
				if err != nil {
					return
				}
				if !send("output", outputEvent{Attempt: at.Number, Output: cleanOutput(at.Output), Dropped: at.Dropped}) {
					return
				}
			}
			if j.State.Finished() {
				send("end", map[string]queue.State{"state": j.State})
				return
			}
		}
		if live, err := s.liveOutput(ctx, j); err != nil {
			return
		} else if live != nil && (live.Attempt != lastLive.Attempt || live.Written != lastLive.Written) {
			lastLive = *live
			if !send("live", live) {
				return
			}
		}
		if time.Now().After(keepAlive) {
			rc.SetWriteDeadline(time.Now().Add(30 * time.Second))
			if _, err := fmt.Fprint(w, ": keep-alive\n\n"); err != nil || rc.Flush() != nil {
				return
			}
			keepAlive = time.Now().Add(eventKeepAlive)
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(eventPoll):
		}
		if time.Now().After(deadline) {
			return
		}
		if j, err = s.cfg.Store.GetJob(ctx, id); err != nil {
			send("end", map[string]string{"error": toAPIError(err).Code})
			return
		}
	}
}
