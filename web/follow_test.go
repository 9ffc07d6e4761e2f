package web

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/queuectl/queuectl/queue"
)

// GET /api/v1/jobs/{id}/output?follow=1 streams a running attempt's output
// from its start as workers save it, and ends with the rest of the
// recorded output when the attempt ends.
func TestFollowOutputOfARunningJob(t *testing.T) {
	for _, sk := range stores() {
		t.Run(sk.name, func(t *testing.T) {
			h := newHarness(t, sk.open(t), adminToken, viewerToken)
			h.enqueue(`{"id":"run","command":"long"}`)
			job := h.claim("run")
			save := func(out string) { h.saveLive("run", out) }
			save("step 1\n")

			srv := httptest.NewServer(h.srv.Handler())
			defer srv.Close()
			res := followRequest(t, srv.URL+"/api/v1/jobs/run/output?follow=1", viewerToken)
			defer res.Body.Close()
			if res.StatusCode != http.StatusOK || res.Header.Get("Content-Type") != "text/plain; charset=utf-8" {
				t.Fatalf("status %d, content type %q", res.StatusCode, res.Header.Get("Content-Type"))
			}
			lines := bufio.NewReader(res.Body)
			next := func(want string) {
				t.Helper()
				got, err := lines.ReadString('\n')
				if got != want {
					t.Fatalf("read %q (%v), want %q", got, err, want)
				}
			}
			next("step 1\n")
			save("step 1\nstep 2\n")
			next("step 2\n")

			code := 0
			now := h.clock.Now()
			end := queue.End{Outcome: queue.OutcomeSucceeded, ExitCode: &code, Started: now, Finished: now.Add(time.Second),
				Output: []byte("step 1\nstep 2\ndone\n")}
			f := queue.RetryPolicy{}.Decide(job, "w1", end, end.Finished)
			if _, err := h.store.FinishJobs(context.Background(), []queue.Finish{f}); err != nil {
				t.Fatal(err)
			}
			rest, err := io.ReadAll(lines)
			if err != nil || string(rest) != "done\n" {
				t.Errorf("after the attempt ended: %q, %v; want the rest of its output, then the end", rest, err)
			}
		})
	}
}

// On a finished job the follow answers its latest attempt's output and
// ends; the viewer role may follow, no token may not, and an unknown job is
// a 404 before anything streams.
func TestFollowOutputOfAFinishedJob(t *testing.T) {
	for _, sk := range stores() {
		t.Run(sk.name, func(t *testing.T) {
			h := newHarness(t, sk.open(t), adminToken, viewerToken)
			h.enqueue(`{"id":"done","command":"true"}`)
			h.runJob("done", queue.OutcomeSucceeded, "all of it\n")

			rec := h.must(req{path: "/api/v1/jobs/done/output?follow=1", token: viewerToken}, http.StatusOK)
			if got := rec.Body.String(); got != "all of it\n" {
				t.Errorf("body %q", got)
			}
			if got := rec.Header().Get("X-Job-State"); got != "completed" {
				t.Errorf("X-Job-State %q", got)
			}
			if code := errCode(t, h.must(req{path: "/api/v1/jobs/done/output?follow=1"}, http.StatusUnauthorized)).Code; code != codeUnauthorized {
				t.Errorf("no token: code %q", code)
			}
			if code := errCode(t, h.must(req{path: "/api/v1/jobs/nope/output?follow=1", token: viewerToken}, http.StatusNotFound)).Code; code != codeNotFound {
				t.Errorf("unknown job: code %q", code)
			}
			if f := errCode(t, h.must(req{path: "/api/v1/jobs/done/output?follow=1&attempt=1", token: viewerToken}, http.StatusBadRequest)).Field; f != "attempt" {
				t.Errorf("follow with attempt: field %q", f)
			}
		})
	}
}

// A follow of a pending job answers at once and waits for its attempt.
func TestFollowOutputOfAPendingJob(t *testing.T) {
	h := tokens(t)
	h.enqueue(`{"id":"later","command":"true"}`)
	srv := httptest.NewServer(h.srv.Handler())
	defer srv.Close()
	res := followRequest(t, srv.URL+"/api/v1/jobs/later/output?follow=true", viewerToken)
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK || res.Header.Get("X-Job-State") != "pending" {
		t.Fatalf("status %d, state %q", res.StatusCode, res.Header.Get("X-Job-State"))
	}
	h.runJob("later", queue.OutcomeSucceeded, "ran\n")
	if b, err := io.ReadAll(res.Body); err != nil || string(b) != "ran\n" {
		t.Errorf("body %q, %v", b, err)
	}
}

// A job that runs after another waits for its attempt as a pending one
// does, rather than ending at once with no output.
func TestFollowOutputOfAWaitingJob(t *testing.T) {
	for _, sk := range stores() {
		t.Run(sk.name, func(t *testing.T) {
			st := &lookingStore{Store: sk.open(t), looked: make(chan queue.State, 100)}
			h := newHarness(t, st, adminToken, viewerToken)
			h.enqueue(`{"id":"build","command":"true"}`)
			h.enqueue(`{"id":"test","command":"true","after":["build"]}`)
			srv := httptest.NewServer(h.srv.Handler())
			defer srv.Close()
			res := followRequest(t, srv.URL+"/api/v1/jobs/test/output?follow=1", viewerToken)
			defer res.Body.Close()
			if res.StatusCode != http.StatusOK || res.Header.Get("X-Job-State") != "waiting" {
				t.Fatalf("status %d, state %q", res.StatusCode, res.Header.Get("X-Job-State"))
			}
			if state := <-st.looked; state != queue.StateWaiting { // the follower saw it wait
				t.Fatalf("the follower found the job %s", state)
			}
			h.runJob("build", queue.OutcomeSucceeded, "built\n")
			h.runJob("test", queue.OutcomeSucceeded, "tested\n")
			if b, err := io.ReadAll(res.Body); err != nil || string(b) != "tested\n" {
				t.Errorf("body %q, %v; want the output of the attempt that ran after the wait", b, err)
			}
		})
	}
}

// lookingStore reports the state of each job read once a follower has
// subscribed to the job events, which it does before its first read.
type lookingStore struct {
	queue.Store
	following atomic.Bool
	looked    chan queue.State
}

func (s *lookingStore) JobEvents(ctx context.Context) (<-chan struct{}, error) {
	s.following.Store(true)
	return s.Store.JobEvents(ctx)
}

func (s *lookingStore) GetJob(ctx context.Context, id string) (*queue.Job, error) {
	j, err := s.Store.GetJob(ctx, id)
	if err == nil && s.following.Load() {
		select {
		case s.looked <- j.State:
		default:
		}
	}
	return j, err
}

// followRequest starts a follow; the test's deadline bounds it.
func followRequest(t *testing.T, url, token string) *http.Response {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	r, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	r.Header.Set("Authorization", "Bearer "+token)
	res, err := http.DefaultClient.Do(r)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(res.Header.Get("Content-Type"), "text/plain") {
		t.Fatalf("content type %q", res.Header.Get("Content-Type"))
	}
	return res
}

// stalledStore is a database that does not answer a job read: it returns
// only when the read's deadline passes, at once for a deadline no later
// than a request's, and never without one.
type stalledStore struct{ queue.Store }

func (stalledStore) GetJob(ctx context.Context, id string) (*queue.Job, error) {
	if d, ok := ctx.Deadline(); ok && time.Until(d) <= requestTimeout {
		return nil, context.DeadlineExceeded
	}
	<-ctx.Done()
	return nil, ctx.Err()
}

// A stream whose job the database does not answer for answers 503 within
// the deadline of a request's store calls, as every other endpoint does,
// rather than no status at all for as long as the client waits.
func TestStreamsOfAJobTheDatabaseDoesNotAnswer(t *testing.T) {
	h := newHarness(t, stalledStore{openSQLite(t)}, adminToken, viewerToken)
	for _, path := range []string{"/api/v1/jobs/j/events", "/api/v1/jobs/j/output?follow=1"} {
		ctx, cancel := context.WithCancel(context.Background()) // the client, who gives up after 5s
		giveUp := time.AfterFunc(5*time.Second, cancel)
		r := httptest.NewRequestWithContext(ctx, "GET", path, nil)
		r.Host, r.RemoteAddr = "127.0.0.1:8080", "127.0.0.1:5555"
		r.Header.Set("Authorization", "Bearer "+viewerToken)
		rec := httptest.NewRecorder()
		h.srv.Handler().ServeHTTP(rec, r)
		timedOut := !giveUp.Stop()
		cancel()
		if timedOut || rec.Code != http.StatusServiceUnavailable || errCode(t, rec).Code != codeUnavailable {
			t.Errorf("%s: status %d after the client gave up: %v; body %s", path, rec.Code, timedOut, rec.Body.String())
		}
	}
}

// stallingStore answers the first job read, then stalls as stalledStore.
type stallingStore struct {
	queue.Store
	reads *atomic.Int32
}

func (s stallingStore) GetJob(ctx context.Context, id string) (*queue.Job, error) {
	if s.reads.Add(1) == 1 {
		return s.Store.GetJob(ctx, id)
	}
	return stalledStore{}.GetJob(ctx, id)
}

// An event stream whose database stops answering ends, with the code
// of the error, within the deadline of a request's store calls, rather
// than hang without a keep-alive for as long as the connection lasts.
func TestEventStreamEndsWhenTheDatabaseStopsAnswering(t *testing.T) {
	st := openSQLite(t)
	newHarness(t, st, adminToken, viewerToken).enqueue(`{"id": "later", "command": "true", "run_at": "+1h"}`)
	h := newHarness(t, stallingStore{st, new(atomic.Int32)}, adminToken, viewerToken)
	rec, ended := serveWithin(h, "GET", "/api/v1/jobs/later/events", 5*time.Second)
	if !ended || !strings.Contains(rec.Body.String(), "event: end\ndata: {\"error\":\"unavailable\"}") {
		t.Errorf("the stream after the database stopped answering:\n%s", rec.Body.String())
	}
}

// HEAD of a stream (events, followed output) answers its headers and ends:
// following a pending job, the stream would otherwise go on unseen for up
// to an hour, and a client that keeps the connection waits that long for
// its next answer.
func TestHeadOfAStreamEnds(t *testing.T) {
	h := tokens(t)
	h.enqueue(`{"id": "later", "command": "true", "run_at": "+1h"}`)
	for path, contentType := range map[string]string{
		"/api/v1/jobs/later/events":          "text/event-stream",
		"/api/v1/jobs/later/output?follow=1": "text/plain; charset=utf-8",
	} {
		rec, ended := serveWithin(h, "HEAD", path, 5*time.Second)
		if !ended || rec.Code != http.StatusOK || rec.Header().Get("Content-Type") != contentType {
			t.Errorf("HEAD %s: ended %v, %d %q", path, ended, rec.Code, rec.Header().Get("Content-Type"))
		}
	}
}

// A followed output whose database stops answering ends within the
// deadline of a request's store calls, rather than hang with nothing
// sent for as long as the connection lasts.
func TestFollowedOutputEndsWhenTheDatabaseStopsAnswering(t *testing.T) {
	st := openSQLite(t)
	newHarness(t, st, adminToken, viewerToken).enqueue(`{"id": "later", "command": "true", "run_at": "+1h"}`)
	h := newHarness(t, stallingStore{st, new(atomic.Int32)}, adminToken, viewerToken)
	rec, ended := serveWithin(h, "GET", "/api/v1/jobs/later/output?follow=1", 5*time.Second)
	if !ended || rec.Code != http.StatusOK {
		t.Errorf("the followed output after the database stopped answering: %d %q", rec.Code, rec.Body.String())
	}
}

// serveWithin serves a viewer's request from a client that gives up after
// within; ended is false when the server had not answered by then.
func serveWithin(h *harness, method, path string, within time.Duration) (rec *httptest.ResponseRecorder, ended bool) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	giveUp := time.AfterFunc(within, cancel)
	r := httptest.NewRequestWithContext(ctx, method, path, nil)
	r.Host, r.RemoteAddr = "127.0.0.1:8080", "127.0.0.1:5555"
	r.Header.Set("Authorization", "Bearer "+viewerToken)
	rec = httptest.NewRecorder()
	h.srv.Handler().ServeHTTP(rec, r)
	return rec, giveUp.Stop()
}
