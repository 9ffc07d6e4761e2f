package web

import (
	"encoding/json"
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

// jobEvents streams a job as server-sent events: "job" (its JSON, whenever
// it changes), "output" (each attempt's output as the attempt ends) and
// "end" once the job is finished. Workers store output when an attempt
// ends, so a running attempt's output arrives then.
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
				at, err := s.cfg.Store.Output(ctx, id, hist[sentOutputs].Number)
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
