package postgres_test

import (
	"context"
	"errors"
	"net"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
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
	_, err = s.GetJob(ctx, "a") // on the connection InsertJobs left idle
	var ce *pgconn.ConnectError
	if err == nil || ctx.Err() != nil || errors.As(err, &ce) {
		t.Fatalf("a statement on a partitioned connection: %v after %s (the test's bound passed: %v); want the connection given up",
			err, time.Since(start).Round(time.Millisecond), ctx.Err() != nil)
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
	for _, bad := range []string{"soon", "-1", "1.5"} {
		_, err := postgres.Open(tctx(t), baseURL(t)+"&tcp_user_timeout="+bad)
		if err == nil || !strings.Contains(err.Error(), `tcp_user_timeout "`+bad+`"`) {
			t.Errorf("tcp_user_timeout %q: %v; want it refused, naming it", bad, err)
		}
	}
}
