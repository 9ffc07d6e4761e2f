package web

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/queuectl/queuectl/queue"
)

// gatedStore holds job counts (GET /api/v1/status) until released, so a
// request is in flight while the server shuts down.
type gatedStore struct {
	queue.Store
	entered, release chan struct{}
}

func (g gatedStore) CountJobs(ctx context.Context) ([]queue.Count, error) {
	g.entered <- struct{}{}
	<-g.release
	return g.Store.CountJobs(ctx)
}

// Shutting down lets a request in flight finish (its store calls are not
// cancelled under it, which answered 500), while an event stream ends at
// once rather than hold the shutdown.
func TestShutdownLetsRequestsInFlightFinish(t *testing.T) {
	g := gatedStore{Store: openSQLite(t), entered: make(chan struct{}), release: make(chan struct{})}
	h := newHarness(t, g, adminToken, viewerToken)
	h.enqueue(`{"id": "later", "command": "true", "run_at": "+1h"}`)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	served := make(chan error, 1)
	go func() { served <- h.srv.Serve(ctx, ln) }()
	base := "http://" + ln.Addr().String()
	get := func(path string) (*http.Response, error) {
		r, _ := http.NewRequest("GET", base+path, nil)
		r.Header.Set("Authorization", "Bearer "+viewerToken)
		return http.DefaultClient.Do(r)
	}
	events, err := get("/api/v1/jobs/later/events")
	if err != nil {
		t.Fatal(err)
	}
	defer events.Body.Close()
	type answer struct {
		code int
		body string
	}
	answers := make(chan answer, 1)
	ask := func(path string) {
		resp, err := get(path)
		if err != nil {
			answers <- answer{body: err.Error()}
			return
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		answers <- answer{resp.StatusCode, path + ": " + string(b)}
	}
	go ask("/api/v1/status")
	<-g.entered
	stop()
	// The stream ends at once; the request in flight finishes.
	if _, err := io.ReadAll(events.Body); err != nil {
		t.Errorf("the event stream: %v", err)
	}
	close(g.release)
	if a := <-answers; a.code != http.StatusOK {
		t.Errorf("a request in flight at shutdown: %d %s", a.code, a.body)
	}
	select {
	case err := <-served:
		if err != nil {
			t.Errorf("serve: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("serve did not return")
	}
}

// A wait the shutdown ends answers as one whose time ran out: the job
// as it is, not final, rather than a 500.
func TestShutdownEndsAWaitWithTheJob(t *testing.T) {
	h := tokens(t)
	h.enqueue(`{"id": "later", "command": "true", "run_at": "+1h"}`)
	shutdown, stop := context.WithCancel(context.Background())
	stop()
	ctx := context.WithValue(context.Background(), shutdownKey{}, shutdown)
	r := httptest.NewRequestWithContext(ctx, "GET", "/api/v1/jobs/later/wait", nil)
	r.Host, r.RemoteAddr = "127.0.0.1:8080", "127.0.0.1:5555"
	r.Header.Set("Authorization", "Bearer "+viewerToken)
	rec := httptest.NewRecorder()
	h.srv.Handler().ServeHTTP(rec, r)
	if got := decode[waitResult](t, rec); rec.Code != http.StatusOK || got.Final || got.Job == nil || got.Job.ID != "later" {
		t.Errorf("a wait ended by the shutdown: %d %s", rec.Code, rec.Body.String())
	}
}
