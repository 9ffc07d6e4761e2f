package web

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"
	"unicode/utf8"

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

// liveEvent carries the output of the running attempt so far, cleaned like
// every output shown, and the bytes written in all: as a "live" event the
// last 64 KiB of it, as a "live-append" event what follows the last line
// break of the text the client holds.
type liveEvent struct {
	Attempt int    `json:"attempt"`
	Output  string `json:"output"`
	Written int64  `json:"written"`
}

// liveSnapshot cleans a live output whole; a tail that starts mid-line
// starts at the next line instead, so no cut escape sequence shows. It also
// returns the offset in the attempt's output of the start of the event's
// last (unfinished) line.
func liveSnapshot(l *queue.LiveOutput) (liveEvent, int64) {
	start := 0
	if l.Written > int64(len(l.Output)) {
		if i := bytes.IndexByte(l.Output, '\n'); i >= 0 {
			start = i + 1
		}
	}
	return liveFrom(l, settled(l.Output), start)
}

// liveFrom cleans l's output from index i, a line start, and returns the
// offset in the attempt's output where its last line starts. It leaves
// out the end of the output that is not settled yet (out is
// settled(l.Output)): a rune cut short, and a carriage return that the
// next byte may pair with a line feed. The next event sends them.
func liveFrom(l *queue.LiveOutput, out []byte, i int) (liveEvent, int64) {
	text, last := cleanLines(out[i:])
	base := l.Written - int64(len(l.Output))
	return liveEvent{Attempt: l.Attempt, Output: text, Written: l.Written}, base + int64(i+last)
}

// settled is b without a last rune cut short and then a last "\r".
func settled(b []byte) []byte {
	for k := 1; k < utf8.UTFMax && k <= len(b); k++ {
		if c := b[len(b)-k]; utf8.RuneStart(c) {
			if !utf8.FullRune(b[len(b)-k:]) {
				b = b[:len(b)-k]
			}
			break
		}
	}
	return bytes.TrimSuffix(b, []byte{'\r'})
}

// liveCursor is what an event stream sent of a running attempt's output,
// so that it sends only what is new.
type liveCursor struct {
	attempt int
	started time.Time // attempt numbers start over when a job is retried
	written int64
	// lineStart is the offset in the attempt's output of the line the
	// client holds unfinished (after the last line break it holds).
	lineStart int64
}

// next is the event that brings a client up to live output l of the
// attempt that started at started: "" when nothing is new; "live-append"
// with the cleaned output from the start of the line the client holds
// unfinished, which the client drops and replaces with it; or "live", the
// whole tail again, for a new attempt or when that line start is no longer
// in the tail (more than the tail was written since the last event).
func (c *liveCursor) next(l *queue.LiveOutput, started time.Time) (string, liveEvent) {
	same := l.Attempt == c.attempt && started.Equal(c.started)
	if same && l.Written == c.written {
		return "", liveEvent{}
	}
	i := c.lineStart - (l.Written - int64(len(l.Output)))
	if out := settled(l.Output); same && l.Written > c.written && i >= 0 && i <= int64(len(out)) {
		ev, lineStart := liveFrom(l, out, int(i))
		c.written, c.lineStart = l.Written, lineStart
		return "live-append", ev
	}
	ev, lineStart := liveSnapshot(l)
	*c = liveCursor{attempt: l.Attempt, started: started, written: l.Written, lineStart: lineStart}
	return "live", ev
}

// runningOutput is the job's running attempt's output so far, or nil.
func (s *Server) runningOutput(ctx context.Context, j *queue.Job) (*queue.LiveOutput, error) {
	if j.State != queue.StateProcessing {
		return nil, nil
	}
	l, err := s.cfg.Store.LiveOutput(ctx, j.ID)
	if errors.Is(err, queue.ErrNotFound) {
		return nil, nil
	}
	return l, err
}

// liveOutput is the job's running attempt's output so far as shown, or nil.
func (s *Server) liveOutput(ctx context.Context, j *queue.Job) (*liveEvent, error) {
	l, err := s.runningOutput(ctx, j)
	if l == nil || err != nil {
		return nil, err
	}
	ev, _ := liveSnapshot(l)
	return &ev, nil
}

// streamedJob reads the job a stream follows within the deadline of a
// request's store calls: a database that does not answer gets its 503
// (or, once the stream has begun, its error code in an end event), where
// the stream's own context would wait for as long as the client does.
func (s *Server) streamedJob(ctx context.Context, id string) (*queue.Job, error) {
	return boundedReads{s.cfg.Store}.GetJob(ctx, id)
}

// jobEvents streams a job as server-sent events: "job" (its JSON, whenever
// it changes), "live" and "live-append" (the running attempt's output so
// far, then what it adds, whenever it grows; workers save it about once a
// second; see liveCursor), "output" (each attempt's whole output as the
// attempt ends) and "end" once the job is finished. The stream ends
// when its session is signed out.
func (s *Server) jobEvents(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	ctx, cancel := s.whileSignedIn(r)
	defer cancel()
	j, err := s.streamedJob(ctx, id)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	rc := http.NewResponseController(w)
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	if r.Method == http.MethodHead {
		return // the headers are the answer: the stream would go on unseen
	}
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
	var live liveCursor
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
		if l, err := s.runningOutput(ctx, j); err != nil {
			return
		} else if l != nil {
			if event, ev := live.next(l, j.StartedAt); event != "" && !send(event, ev) {
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
		// Bounded as the first read: a database that stops answering
		// ends the stream with "unavailable" rather than hang it.
		if j, err = s.streamedJob(ctx, id); err != nil {
			send("end", map[string]string{"error": toAPIError(err).Code})
			return
		}
	}
}
