package postgres

import (
	"fmt"
	"math"
	"net"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
)

// defaultTCPUserTimeout bounds how long data sent on a connection may stay
// unacknowledged before the connection is given up (TCP_USER_TIMEOUT, on
// Linux), when the URL does not say (tcp_user_timeout, in milliseconds, as
// libpq takes it). Without it, a statement sent on a connection whose
// packets are dropped (a network partition, a host that failed over) waits
// for TCP's retransmissions, about a quarter of an hour, and so does the
// command that sent it. A server that takes long to answer is not cut
// off: the statement it received was acknowledged.
const defaultTCPUserTimeout = 30 * time.Second

// tcpUserTimeout takes the URL's tcp_user_timeout out of params (it is the
// client's setting, not one for the server) and returns it, or the default.
func tcpUserTimeout(params map[string]string) (time.Duration, error) {
	v, ok := params["tcp_user_timeout"]
	if !ok {
		return defaultTCPUserTimeout, nil
	}
	delete(params, "tcp_user_timeout")
	ms, err := strconv.ParseInt(v, 10, 32) // the socket option is a C int
	if err != nil || ms < 0 {
		return 0, fmt.Errorf("tcp_user_timeout %q: want a whole number of milliseconds up to %d, 0 for the system's default", v, math.MaxInt32)
	}
	return time.Duration(ms) * time.Millisecond, nil
}

// dialFunc connects as pgx does, bounded by connectTimeout (0: none), and
// sets userTimeout (0: the system's) on TCP connections.
func dialFunc(connectTimeout, userTimeout time.Duration) pgconn.DialFunc {
	d := &net.Dialer{Timeout: connectTimeout}
	if userTimeout > 0 {
		d.Control = func(network, _ string, c syscall.RawConn) error {
			if !strings.HasPrefix(network, "tcp") { // a Unix socket
				return nil
			}
			return setUserTimeout(c, userTimeout)
		}
	}
	return d.DialContext
}

// patient takes the TCP user timeout off c, an import's connection, and
// returns what puts it back. Linux gives a connection up after the user
// timeout also when the other side's receive window stays closed: when the
// server stops reading an import's COPY while it waits for a lock (another
// import's keys, a migration), a well server would be cut off after 30 s.
// An import's connection therefore waits as long as TCP does.
func patient(c net.Conn, userTimeout time.Duration) (restore func()) {
	if tc, ok := c.(interface{ NetConn() net.Conn }); ok { // TLS
		c = tc.NetConn()
	}
	tcp, ok := c.(*net.TCPConn)
	if !ok || userTimeout == 0 {
		return func() {}
	}
	raw, err := tcp.SyscallConn()
	if err != nil || setUserTimeout(raw, 0) != nil {
		return func() {}
	}
	return func() { setUserTimeout(raw, userTimeout) }
}
