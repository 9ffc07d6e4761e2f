package postgres_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/queuectl/queuectl/internal/testpg"
	"github.com/queuectl/queuectl/queue"
	"github.com/queuectl/queuectl/queue/postgres"
	"github.com/queuectl/queuectl/queue/storetest"
)

// The tests need a PostgreSQL server: TEST_DATABASE_URL names a database
// the user may create schemas in. Each test works in a schema of its own,
// dropped when it ends.

var (
	reachOnce sync.Once
	reachErr  error
)

func baseURL(t testing.TB) string {
	t.Helper()
	u := os.Getenv("TEST_DATABASE_URL")
	if u == "" {
		testpg.Unavailable(t, "PostgreSQL tests skipped: set TEST_DATABASE_URL (e.g. postgres://user@127.0.0.1:5432/test?sslmode=disable) to run them")
	}
	reachOnce.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		c, err := pgx.Connect(ctx, u)
		if err == nil {
			c.Close(ctx)
		}
		reachErr = err
	})
	if reachErr != nil {
		testpg.Unavailable(t, "PostgreSQL tests skipped: the server at TEST_DATABASE_URL is unreachable: %v", reachErr)
	}
	return u
}

func tctx(t testing.TB) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return c
}

// admin runs statements on a connection of its own, outside any store.
func admin(t testing.TB, sql string, args ...any) {
	t.Helper()
	if err := adminErr(baseURL(t), sql, args...); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
}

func adminErr(u, sql string, args ...any) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := pgx.Connect(ctx, u)
	if err != nil {
		return err
	}
	defer c.Close(ctx)
	_, err = c.Exec(ctx, sql, args...)
	return err
}

// adminConn is a connection of the test's own, outside any store, closed
// when the test ends.
func adminConn(t *testing.T) *pgx.Conn {
	t.Helper()
	c, err := pgx.Connect(tctx(t), baseURL(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close(context.Background()) })
	return c
}

func adminQueryInt(t *testing.T, sql string, args ...any) int {
	t.Helper()
	var n int
	if err := adminConn(t).QueryRow(tctx(t), sql, args...).Scan(&n); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	return n
}

func randomName(prefix string) string {
	b := make([]byte, 6)
	rand.Read(b)
	return prefix + hex.EncodeToString(b)
}

// withParams adds connection parameters to a URL or key=value string.
func withParams(t testing.TB, base string, kv ...string) string {
	t.Helper()
	if strings.HasPrefix(base, "postgres://") || strings.HasPrefix(base, "postgresql://") {
		u, err := url.Parse(base)
		if err != nil {
			t.Fatal(err)
		}
		q := u.Query()
		for i := 0; i < len(kv); i += 2 {
			q.Set(kv[i], kv[i+1])
		}
		u.RawQuery = q.Encode()
		return u.String()
	}
	for i := 0; i < len(kv); i += 2 {
		base += " " + kv[i] + "=" + kv[i+1]
	}
	return base
}

// newSchema creates an empty schema for one test and returns its name and
// a URL whose search_path (and application_name) is that schema.
func newSchema(t testing.TB) (schema, u string) {
	t.Helper()
	base := baseURL(t)
	schema = randomName("qt_")
	admin(t, "CREATE SCHEMA "+schema)
	t.Cleanup(func() {
		if err := adminErr(base, "DROP SCHEMA "+schema+" CASCADE"); err != nil {
			t.Errorf("drop schema %s: %v", schema, err)
		}
	})
	return schema, withParams(t, base, "search_path", schema, "application_name", schema)
}

func open(t testing.TB, u string) *postgres.Store {
	t.Helper()
	s, err := postgres.Open(tctx(t), u)
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func TestConformance(t *testing.T) {
	baseURL(t)
	storetest.Run(t, func(t *testing.T) storetest.Opener {
		schema, u := newSchema(t)
		t.Cleanup(func() { checkJobTotals(t, schema) }) // every test checks the counts at its end
		return func(t *testing.T) queue.Store { return open(t, u) }
	})
}

// checkJobTotals compares the job counts the statements (and the delete
// trigger) keep with a full count of the jobs table.
func checkJobTotals(t *testing.T, schema string) {
	t.Helper()
	ctx, c := tctx(t), adminConn(t)
	read := func(q string) []string {
		rows, err := c.Query(ctx, q)
		if err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		var out []string
		var queue, state string
		var n int64
		if _, err := pgx.ForEachRow(rows, []any{&queue, &state, &n}, func() error {
			out = append(out, fmt.Sprint(queue, " ", state, " ", n))
			return nil
		}); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		return out
	}
	kept := read(`SELECT queue, state, sum(n)::bigint FROM ` + schema + `.job_totals GROUP BY 1, 2 HAVING sum(n) <> 0 ORDER BY 1, 2`)
	want := read(`SELECT queue, state, count(*) FROM ` + schema + `.jobs GROUP BY 1, 2 ORDER BY 1, 2`)
	if !reflect.DeepEqual(kept, want) {
		t.Errorf("job counts:\nkept %v\nwant %v", kept, want)
	}
}

func TestMigrateIsIdempotent(t *testing.T) {
	schema, u := newSchema(t)
	n, err := postgres.Migrate(tctx(t), u)
	if err != nil || n != postgres.LatestVersion() || n < 1 {
		t.Fatalf("first migrate: applied %d, err %v (latest %d)", n, err, postgres.LatestVersion())
	}
	if n, err := postgres.Migrate(tctx(t), u); err != nil || n != 0 {
		t.Fatalf("second migrate: applied %d, err %v", n, err)
	}
	open(t, u).Close()
	if got := adminQueryInt(t, "SELECT count(*) FROM "+schema+".schema_version"); got != postgres.LatestVersion() {
		t.Fatalf("schema_version has %d rows, want %d", got, postgres.LatestVersion())
	}
}

func TestConcurrentOpensAgree(t *testing.T) {
	schema, u := newSchema(t)
	const n = 8
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s, err := postgres.Open(tctx(t), u)
			if err != nil {
				errs <- err
				return
			}
			s.Close()
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Errorf("concurrent open: %v", err)
	}
	if got := adminQueryInt(t, "SELECT count(*) FROM "+schema+".schema_version"); got != postgres.LatestVersion() {
		t.Fatalf("schema_version has %d rows, want %d", got, postgres.LatestVersion())
	}
	// The schema works after the race.
	s := open(t, u)
	if err := s.SetConfig(tctx(t), "k", "v"); err != nil {
		t.Fatal(err)
	}
}

func TestNewerSchemaRefused(t *testing.T) {
	schema, u := newSchema(t)
	open(t, u).Close()
	admin(t, "INSERT INTO "+schema+".schema_version (version) VALUES (999)")
	_, err := postgres.Open(tctx(t), u)
	if !errors.Is(err, queue.ErrSchemaNewer) || !strings.Contains(err.Error(), "999") {
		t.Fatalf("open: want ErrSchemaNewer naming version 999, got %v", err)
	}
	if _, err := postgres.Migrate(tctx(t), u); !errors.Is(err, queue.ErrSchemaNewer) {
		t.Fatalf("migrate: want ErrSchemaNewer, got %v", err)
	}
}

func TestMissingSchema(t *testing.T) {
	u := withParams(t, baseURL(t), "search_path", randomName("qt_missing_"))
	_, err := postgres.Open(tctx(t), u)
	if err == nil || !strings.Contains(err.Error(), "no existing schema") {
		t.Fatalf("want an error naming the missing schema, got %v", err)
	}
}

// waitFor polls cond until it holds or the deadline passes.
func waitFor(t *testing.T, what string, d time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func expectWake(t *testing.T, wake <-chan struct{}, what string) {
	t.Helper()
	select {
	case _, ok := <-wake:
		if !ok {
			t.Fatalf("%s: wake-up channel closed", what)
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("%s: no wake-up", what)
	}
}

func newJob(t *testing.T, id string) *queue.Job {
	t.Helper()
	j, err := queue.NewJob{ID: id, Command: "true"}.Resolve(queue.DefaultSettings(), time.Now())
	if err != nil {
		t.Fatal(err)
	}
	return j
}

func TestWakeupsSurviveDroppedListener(t *testing.T) {
	schema, u := newSchema(t)
	watcher, writer := open(t, u), open(t, u)
	ctx, cancel := context.WithCancel(tctx(t))
	defer cancel()
	wake, err := watcher.Wakeups(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := writer.InsertJobs(tctx(t), []*queue.Job{newJob(t, "before")}); err != nil {
		t.Fatal(err)
	}
	expectWake(t, wake, "insert before the drop")

	// Drop the listening connection as a server restart would.
	listener := schema + "-listen"
	if n := adminQueryInt(t, `SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE application_name = $1`, listener); n != 1 {
		t.Fatalf("terminated %d listener backends, want 1", n)
	}
	// The listener reconnects and announces it with one wake-up, since
	// notifications may have been lost meanwhile.
	expectWake(t, wake, "reconnect")
	waitFor(t, "a new listener backend", 10*time.Second, func() bool {
		return adminQueryInt(t, `SELECT count(*) FROM pg_stat_activity WHERE application_name = $1 AND query LIKE 'LISTEN%'`, listener) == 1
	})
	select {
	case <-wake:
		t.Fatal("unexpected extra wake-up")
	default:
	}
	if err := writer.InsertJobs(tctx(t), []*queue.Job{newJob(t, "after")}); err != nil {
		t.Fatal(err)
	}
	expectWake(t, wake, "insert after the reconnect")

	cancel()
	for range wake { // closed when ctx ends
	}
}

func TestPoolRecoversFromDroppedConnections(t *testing.T) {
	schema, u := newSchema(t)
	s := open(t, u)
	if err := s.InsertJobs(tctx(t), []*queue.Job{newJob(t, "a")}); err != nil {
		t.Fatal(err)
	}
	if n := adminQueryInt(t, `SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE application_name = $1`, schema); n == 0 {
		t.Fatal("no pool connection to terminate")
	}
	// Calls on dead connections may fail once each; the pool then replaces them.
	var lastErr error
	waitFor(t, "the pool to reconnect", 10*time.Second, func() bool {
		_, lastErr = s.GetJob(tctx(t), "a")
		return lastErr == nil
	})
	claimed, err := s.ClaimJobs(tctx(t), queue.ClaimParams{Worker: "w", Limit: 1, Now: time.Now(), LeaseUntil: time.Now().Add(time.Minute)})
	if err != nil || len(claimed) != 1 {
		t.Fatalf("claim after reconnect: %v %v", claimed, err)
	}
}

func TestWakeupsAfterClose(t *testing.T) {
	_, u := newSchema(t)
	s := open(t, u)
	wake, err := s.Wakeups(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	waitFor(t, "the wake-up channel to close", 10*time.Second, func() bool {
		select {
		case _, ok := <-wake:
			return !ok
		default:
			return false
		}
	})
	if _, err := s.Wakeups(context.Background()); err == nil {
		t.Fatal("Wakeups on a closed store must fail")
	}
}

// proxy forwards TCP connections to the server. Stopping it drops every
// connection and refuses new ones, as a server restart does, without
// disturbing the real server.
type proxy struct {
	t      *testing.T
	addr   string // where it listens
	server string // where it forwards

	mu    sync.Mutex
	ln    net.Listener
	conns []net.Conn
}

func newProxy(t *testing.T, server string) *proxy {
	p := &proxy{t: t, addr: "127.0.0.1:0", server: server}
	p.start()
	t.Cleanup(p.stop)
	return p
}

func (p *proxy) start() {
	p.t.Helper()
	ln, err := net.Listen("tcp", p.addr)
	if err != nil {
		p.t.Fatalf("proxy: %v", err)
	}
	p.mu.Lock()
	p.ln, p.addr = ln, ln.Addr().String()
	p.mu.Unlock()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			s, err := net.Dial("tcp", p.server)
			if err != nil {
				c.Close()
				continue
			}
			p.mu.Lock()
			p.conns = append(p.conns, c, s)
			p.mu.Unlock()
			go func() { io.Copy(s, c); s.Close() }()
			go func() { io.Copy(c, s); c.Close() }()
		}
	}()
}

func (p *proxy) stop() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ln != nil {
		p.ln.Close()
		p.ln = nil
	}
	for _, c := range p.conns {
		c.Close()
	}
	p.conns = nil
}

// TestSurvivesServerRestart runs a store through a proxy that goes away
// and comes back: the pool and the listener must both recover, and the
// listener must wake its subscribers after reconnecting.
func TestSurvivesServerRestart(t *testing.T) {
	_, u := newSchema(t)
	parsed, err := url.Parse(u)
	if err != nil || (parsed.Scheme != "postgres" && parsed.Scheme != "postgresql") || parsed.Host == "" {
		t.Skip("needs TEST_DATABASE_URL in URL form with a TCP host")
	}
	server := parsed.Host
	if parsed.Port() == "" {
		server = net.JoinHostPort(parsed.Hostname(), "5432")
	}
	px := newProxy(t, server)
	parsed.Host = px.addr
	u = parsed.String()

	watcher, writer := open(t, u), open(t, u)
	ctx, cancel := context.WithCancel(tctx(t))
	defer cancel()
	wake, err := watcher.Wakeups(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := writer.InsertJobs(tctx(t), []*queue.Job{newJob(t, "before")}); err != nil {
		t.Fatal(err)
	}
	expectWake(t, wake, "insert before the restart")

	px.stop()
	// While the server is away, calls fail (no hang): first on the dead
	// connections, then on refused new ones.
	waitFor(t, "connections to be refused while the server is away", 10*time.Second, func() bool {
		_, err := writer.GetJob(tctx(t), "before")
		var ce *pgconn.ConnectError
		return errors.As(err, &ce)
	})
	// Stay down long enough for the listener to be refused a few times
	// (this is the outage being simulated, not a wait for anything).
	time.Sleep(700 * time.Millisecond)
	px.start()

	expectWake(t, wake, "listener reconnect")
	var lastErr error
	waitFor(t, "the pool to reconnect", 15*time.Second, func() bool {
		_, lastErr = writer.GetJob(tctx(t), "before")
		return lastErr == nil
	})
	select {
	case <-wake:
	default:
	}
	if err := writer.InsertJobs(tctx(t), []*queue.Job{newJob(t, "after")}); err != nil {
		t.Fatal(err)
	}
	expectWake(t, wake, "insert after the restart")
}

// TestListenerPingsWhenIdle checks that a quiet listener checks its
// connection (so a silently dead one is replaced) and keeps listening.
func TestListenerPingsWhenIdle(t *testing.T) {
	t.Cleanup(postgres.SetListenIdle(100 * time.Millisecond))
	schema, u := newSchema(t)
	watcher, writer := open(t, u), open(t, u)
	ctx, cancel := context.WithCancel(tctx(t))
	defer cancel()
	wake, err := watcher.Wakeups(ctx)
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the idle listener to ping", 10*time.Second, func() bool {
		return adminQueryInt(t, `SELECT count(*) FROM pg_stat_activity WHERE application_name = $1 AND query = '-- ping'`,
			schema+"-listen") == 1
	})
	if err := writer.InsertJobs(tctx(t), []*queue.Job{newJob(t, "a")}); err != nil {
		t.Fatal(err)
	}
	expectWake(t, wake, "insert after pings")
}

// A server that cannot be reached is reported as a failed connection, not
// as a failed migration: nothing was migrated or tried.
func TestOpenUnreachableSaysConnect(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close() // nothing listens there now
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, err = postgres.Open(ctx, "postgres://root@"+addr+"/test?sslmode=disable&connect_timeout=5")
	if err == nil || !strings.Contains(err.Error(), "connect: ") || strings.Contains(err.Error(), "migrate") {
		t.Fatalf("open of an unreachable server: %v", err)
	}
}

// A server that accepts the connection and never answers is given up on
// after the default connect timeout, when the URL sets none: libpq's
// default would wait for ever, and so would every command.
func TestOpenSilentServerTimesOut(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			defer c.Close() // held open, never answered
		}
	}()
	t.Setenv("PGCONNECT_TIMEOUT", "")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute) // the test's own bound
	defer cancel()
	_, err = postgres.Open(ctx, "postgres://root@"+l.Addr().String()+"/test?sslmode=disable")
	if err == nil || ctx.Err() != nil || !strings.Contains(err.Error(), "timeout") {
		t.Fatalf("open of a server that never answers: %v (the test's bound passed: %v)", err, ctx.Err() != nil)
	}
}

// A file the server refuses part-way (a recurring job's name holding a
// NUL, which no text column takes) changes nothing.
func TestApplyConfigFailingLateChangesNothing(t *testing.T) {
	_, u := newSchema(t)
	storetest.ApplyConfigFailingLate(t, open(t, u), &queue.Template{Name: "a\x00b", Queue: "web", Schedule: "@daily", TimeZone: "UTC",
		Command: "true", Overlap: queue.OverlapSkip, CatchUp: queue.CatchUpNone, Enabled: true}, "apply templates")
}
