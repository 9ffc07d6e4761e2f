package web

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/queuectl/queuectl/internal/testutil/fakeclock"
	"github.com/queuectl/queuectl/internal/testutil/syncbuf"
	"github.com/queuectl/queuectl/queue"
	"github.com/queuectl/queuectl/queue/postgres"
	"github.com/queuectl/queuectl/queue/sqlite"
	"github.com/rs/zerolog"
)

const (
	adminToken  = "admin-secret-token"
	viewerToken = "viewer-secret-token"
)

// harness is a server on a real store, called in-process.
type harness struct {
	t     *testing.T
	store queue.Store
	srv   *Server
	clock *fakeclock.Clock
	logs  *syncbuf.Buffer // the server's log, JSON lines
}

type storeKind struct {
	name string
	// database prepares a fresh database; each call of what it returns
	// opens another handle on it, as another process would.
	database func(t *testing.T) func() queue.Store
}

// open opens a handle on a fresh database.
func (k storeKind) open(t *testing.T) queue.Store { return k.database(t)() }

// stores are the stores the handler tests run on: SQLite always,
// PostgreSQL when TEST_DATABASE_URL is set (in CI it must be).
func stores() []storeKind {
	return []storeKind{{"sqlite", sqliteDatabase}, {"postgres", postgresDatabase}}
}

func openSQLite(t *testing.T) queue.Store { return sqliteDatabase(t)() }

// sqliteDatabase is a fresh SQLite file (storeKind.database).
func sqliteDatabase(t *testing.T) func() queue.Store {
	t.Helper()
	path := filepath.Join(t.TempDir(), "queue.db")
	return func() queue.Store {
		st, err := sqlite.Open(context.Background(), path)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		return st
	}
}

// postgresDatabase is a fresh schema on the server of TEST_DATABASE_URL
// (storeKind.database), dropped when the test ends.
func postgresDatabase(t *testing.T) func() queue.Store {
	t.Helper()
	base := os.Getenv("TEST_DATABASE_URL")
	if base == "" {
		if os.Getenv("CI") == "true" {
			t.Fatal("TEST_DATABASE_URL is not set; CI must run the PostgreSQL tests")
		}
		t.Skip("set TEST_DATABASE_URL to run the PostgreSQL handler tests")
	}
	b := make([]byte, 6)
	rand.Read(b)
	schema := "web_" + hex.EncodeToString(b)
	exec := func(sql string) {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		c, err := pgx.Connect(ctx, base)
		if err != nil {
			t.Fatalf("connect: %v", err)
		}
		defer c.Close(context.Background())
		if _, err := c.Exec(ctx, sql); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
	}
	exec("CREATE SCHEMA " + schema)
	t.Cleanup(func() { exec("DROP SCHEMA " + schema + " CASCADE") })
	u, err := url.Parse(base)
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	return func() queue.Store {
		st, err := postgres.Open(context.Background(), u.String())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		return st
	}
}

func newHarness(t *testing.T, st queue.Store, admin, viewer string) *harness {
	t.Helper()
	clock := fakeclock.New(time.Now().UTC().Truncate(time.Microsecond))
	logs := &syncbuf.Buffer{}
	srv, err := New(Config{Store: st, Log: zerolog.New(logs), AdminToken: admin, ViewerToken: viewer, Now: clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	return &harness{t: t, store: st, srv: srv, clock: clock, logs: logs}
}

// tokens is a harness with both tokens on SQLite.
func tokens(t *testing.T) *harness {
	return newHarness(t, openSQLite(t), adminToken, viewerToken)
}

type req struct {
	method, path, body string
	token              string
	header             map[string]string
	cookies            []*http.Cookie
}

func (h *harness) do(r req) *httptest.ResponseRecorder {
	h.t.Helper()
	return h.doHost(r, "127.0.0.1:8080")
}

// t0ctx is a context for store calls in tests.
func t0ctx() context.Context { return context.Background() }

func (h *harness) doHost(r req, host string) *httptest.ResponseRecorder {
	h.t.Helper()
	if r.method == "" {
		r.method = http.MethodGet
	}
	hr := httptest.NewRequest(r.method, r.path, strings.NewReader(r.body))
	hr.Host = host
	hr.RemoteAddr = "127.0.0.1:5555"
	if r.token != "" {
		hr.Header.Set("Authorization", "Bearer "+r.token)
	}
	for k, v := range r.header {
		hr.Header.Set(k, v)
	}
	for _, c := range r.cookies {
		hr.AddCookie(c)
	}
	rec := httptest.NewRecorder()
	h.srv.Handler().ServeHTTP(rec, hr)
	return rec
}

// must does r and checks the status.
func (h *harness) must(r req, status int) *httptest.ResponseRecorder {
	h.t.Helper()
	rec := h.do(r)
	if rec.Code != status {
		h.t.Fatalf("%s %s: status %d, want %d; body: %s", r.method, r.path, rec.Code, status, rec.Body.String())
	}
	return rec
}

func decode[T any](t *testing.T, rec *httptest.ResponseRecorder) T {
	t.Helper()
	var v T
	if err := json.Unmarshal(rec.Body.Bytes(), &v); err != nil {
		t.Fatalf("decode %s: %v", rec.Body.String(), err)
	}
	return v
}

// errCode returns the API error code of a response.
func errCode(t *testing.T, rec *httptest.ResponseRecorder) apiError {
	t.Helper()
	return decode[apiError](t, rec)
}

// enqueue adds a job through the API as admin.
func (h *harness) enqueue(body string) queue.JobJSON {
	h.t.Helper()
	return decode[queue.JobJSON](h.t, h.must(req{method: "POST", path: "/api/v1/jobs", body: body, token: adminToken}, http.StatusCreated))
}

// runJob claims the only runnable job, which must be id, and finishes it
// with the given outcome and output.
func (h *harness) runJob(id string, outcome queue.Outcome, output string) {
	h.t.Helper()
	ctx := context.Background()
	now := h.clock.Now()
	jobs, err := h.store.ClaimJobs(ctx, queue.ClaimParams{Worker: "w1", Limit: 1, Now: now.Add(time.Hour), LeaseUntil: now.Add(2 * time.Hour)})
	if err != nil || len(jobs) != 1 || jobs[0].ID != id {
		h.t.Fatalf("claim %s: %v %v", id, jobs, err)
	}
	code := 0
	end := queue.End{Outcome: outcome, ExitCode: &code, Started: now, Finished: now.Add(1200 * time.Millisecond), Output: []byte(output)}
	if outcome != queue.OutcomeSucceeded {
		code = 1
		end.Error = "exit status 1"
	}
	f := queue.RetryPolicy{}.Decide(jobs[0], "w1", end, end.Finished)
	if _, err := h.store.FinishJobs(ctx, []queue.Finish{f}); err != nil {
		h.t.Fatal(err)
	}
}

// claim claims the only runnable job, which must be id, for worker w1
// with an hour's lease.
func (h *harness) claim(id string) *queue.Job {
	h.t.Helper()
	now := h.clock.Now()
	jobs, err := h.store.ClaimJobs(context.Background(), queue.ClaimParams{Worker: "w1", Limit: 1, Now: now, LeaseUntil: now.Add(time.Hour)})
	if err != nil || len(jobs) != 1 || jobs[0].ID != id {
		h.t.Fatalf("claim %s: %v %v", id, jobs, err)
	}
	return jobs[0]
}

// saveLive saves out as the live output of attempt 1 of id, as w1's.
func (h *harness) saveLive(id, out string) {
	h.t.Helper()
	h.saveLiveOf(id, 1, []byte(out))
}

// saveLiveOf saves out as all that attempt n of id wrote so far, as w1's
// (the store keeps its tail).
func (h *harness) saveLiveOf(id string, n int, out []byte) {
	h.t.Helper()
	err := h.store.SaveLiveOutput(context.Background(), queue.LiveOutput{JobID: id, Worker: "w1", Attempt: n, Output: out,
		Written: int64(len(out)), UpdatedAt: h.clock.Now()})
	if err != nil {
		h.t.Fatal(err)
	}
}

// signIn signs in through the login form and returns the session cookie.
func (h *harness) signIn(token string) *http.Cookie {
	h.t.Helper()
	rec := h.must(req{method: "POST", path: "/login", body: url.Values{"token": {token}, "next": {"/jobs"}}.Encode(),
		header: map[string]string{"Content-Type": "application/x-www-form-urlencoded"}}, http.StatusSeeOther)
	for _, c := range rec.Result().Cookies() {
		if c.Name == sessionCookie {
			return c
		}
	}
	h.t.Fatal("no session cookie")
	return nil
}

var csrfMeta = regexp.MustCompile(`<meta name="csrf-token" content="([^"]+)">`)

// page gets a page with a session and returns its body and CSRF token.
func (h *harness) page(path string, c *http.Cookie) (string, string) {
	h.t.Helper()
	rec := h.must(req{path: path, cookies: []*http.Cookie{c}, header: map[string]string{"Accept": "text/html"}}, http.StatusOK)
	body, _ := io.ReadAll(rec.Body)
	m := csrfMeta.FindSubmatch(body)
	if m == nil {
		h.t.Fatalf("%s: no CSRF token in the page", path)
	}
	return string(body), string(m[1])
}

// deadJobs adds jobs ids to queue q, each dead after its one attempt.
func (h *harness) deadJobs(q string, ids ...string) {
	h.t.Helper()
	for _, id := range ids {
		h.enqueue(`{"id":` + strconv.Quote(id) + `,"command":"false","max_retries":0,"queue":` + strconv.Quote(q) + `}`)
		h.runJob(id, queue.OutcomeFailed, "")
	}
}
