package postgres_test

import (
	"context"
	"net"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/queuectl/queuectl/internal/testutil/blackhole"
	"github.com/queuectl/queuectl/queue"
	"github.com/queuectl/queuectl/queue/postgres"
)

// A statement sent on a connection whose packets are dropped (a network
// partition: nothing acknowledges them) fails once they have gone
// unacknowledged for the URL's tcp_user_timeout, instead of waiting for
// TCP's retransmissions, about a quarter of an hour, with the command that
// sent it.
func TestStatementOnAPartitionedConnectionFails(t *testing.T) {
	_, u := newSchema(t)
	parsed, err := url.Parse(u)
	if err != nil || parsed.Port() == "" {
		t.Fatalf("needs TEST_DATABASE_URL in URL form with a TCP host and port: %q", u)
	}
	px := newProxy(t, parsed.Host)
	parsed.Host = px.addr
	q := parsed.Query()
	q.Set("tcp_user_timeout", "1000")
	parsed.RawQuery = q.Encode()
	s := open(t, parsed.String())
	if err := s.InsertJobs(tctx(t), []*queue.Job{newJob(t, "a")}); err != nil {
		t.Fatal(err)
	}
	_, port, _ := net.SplitHostPort(px.addr)
	n, _ := strconv.Atoi(port)
	blackhole.From(t, n) // the proxy's side: the connection's packets go unanswered
	// The test's own bound: far past the user timeout (and the connect
	// timeout of a new connection), far short of TCP's retransmissions.
	ctx, cancel := context.WithTimeout(context.Background(), 40*time.Second)
	defer cancel()
	start := time.Now()
	// On the connection InsertJobs left idle; the pool pings it first if
	// it has been idle for a second, and then connects again, which the
	// connect timeout bounds: either way the call ends well before the
	// test's bound.
	_, err = s.GetJob(ctx, "a")
	if err == nil || ctx.Err() != nil {
		t.Fatalf("a statement on a partitioned connection: %v after %s (the test's bound passed: %v); want the connection given up",
			err, time.Since(start).Round(time.Millisecond), ctx.Err() != nil)
	}
}

// An import's COPY that the server stops reading while it waits for a
// lock (another import's uncommitted job with the same id, here) is not
// cut off by the TCP user timeout, though the server's receive window
// stays closed for longer than it: the server is well, only waiting.
func TestImportWaitingForALockOutlastsTheUserTimeout(t *testing.T) {
	outlastsTheUserTimeout(t, func(s *postgres.Store, jobs []*queue.Job) error {
		imp := beginImport(t, s)
		if err := imp.Stage(tctx(t), jobs); err != nil {
			return err
		}
		return imp.Commit(tctx(t))
	})
}

// So is a large batch of InsertJobs, an import's jobs sent at once (a
// small one fits in the sockets' buffers).
func TestLargeBatchWaitingForALockOutlastsTheUserTimeout(t *testing.T) {
	outlastsTheUserTimeout(t, func(s *postgres.Store, jobs []*queue.Job) error {
		return s.InsertJobs(tctx(t), jobs)
	})
}

// outlastsTheUserTimeout stores, with store, far more jobs than the
// socket buffers hold, the first of which waits for a lock held for six
// TCP user timeouts, and checks that they are stored once it is released.
func outlastsTheUserTimeout(t *testing.T, store func(*postgres.Store, []*queue.Job) error) {
	schema, u := newSchema(t)
	t.Cleanup(func() { checkJobTotals(t, schema) })
	holder := open(t, u)
	q, _ := url.Parse(u)
	params := q.Query()
	params.Set("tcp_user_timeout", "500")
	q.RawQuery = params.Encode()
	s := open(t, q.String())

	first := beginImport(t, holder)
	if err := first.Stage(tctx(t), []*queue.Job{keyed(t, "x", "", "")}); err != nil {
		t.Fatal(err)
	}
	if err := first.Stage(tctx(t), nil); err != nil { // waits for its COPY
		t.Fatal(err)
	}
	long := strings.Repeat("x", 2000)
	jobs := []*queue.Job{keyed(t, "x", "", "")}
	for i := range 10_000 {
		jobs = append(jobs, keyed(t, "j"+strconv.Itoa(i), "", "echo "+long))
	}
	stored := make(chan error, 1)
	go func() { stored <- store(s, jobs) }()
	watch := adminConn(t)
	waitFor(t, "the jobs to wait for x", 30*time.Second, func() bool {
		var n int
		err := watch.QueryRow(tctx(t), `SELECT count(*) FROM pg_stat_activity
			WHERE application_name = $1 AND wait_event_type = 'Lock'`, schema).Scan(&n)
		return err == nil && n > 0
	})
	// The lock is held for several user timeouts: the fault being made,
	// not a wait for anything.
	time.Sleep(3 * time.Second)
	if err := first.Abort(tctx(t)); err != nil {
		t.Fatal(err)
	}
	if err := <-stored; err != nil {
		t.Fatalf("jobs that waited for a lock: %v; want them stored", err)
	}
	if got, err := s.GetJob(tctx(t), "j9999"); err != nil || got.State != queue.StatePending {
		t.Fatalf("j9999: %+v, %v", got, err)
	}
}

// tcp_user_timeout is read as libpq reads it, a number of milliseconds;
// anything else is refused when the store opens, naming it.
func TestTCPUserTimeoutSetting(t *testing.T) {
	for in, want := range map[string]time.Duration{"": 30 * time.Second, "0": 0, "1500": 1500 * time.Millisecond} {
		params := map[string]string{"application_name": "x"}
		if in != "" {
			params["tcp_user_timeout"] = in
		}
		got, err := postgres.TCPUserTimeout(params)
		if err != nil || got != want {
			t.Errorf("tcp_user_timeout %q: %s, %v; want %s", in, got, err, want)
		}
		if _, sent := params["tcp_user_timeout"]; sent || params["application_name"] != "x" {
			t.Errorf("tcp_user_timeout %q: the parameters sent to the server are %v", in, params)
		}
	}
	for _, bad := range []string{"soon", "-1", "1.5", "2147483648"} {
		_, err := postgres.Open(tctx(t), baseURL(t)+"&tcp_user_timeout="+bad)
		if err == nil || !strings.Contains(err.Error(), `tcp_user_timeout "`+bad+`"`) {
			t.Errorf("tcp_user_timeout %q: %v; want it refused, naming it", bad, err)
		}
	}
}
