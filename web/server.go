// Package web owns queuectl's HTTP surface: the dashboard pages, the JSON
// API under /api/v1, the Prometheus /metrics endpoint and the health checks,
// with the authentication (admin and viewer tokens, browser sessions), CSRF
// protection and security headers they share.
//
// It reads and changes the queue only through queue.Store and the view
// package, so the API serves the same JSON shapes as the CLI's --json
// output. Templates, styles, script and charts are embedded: the binary
// needs no network at run time. Charts are SVG rendered on the server.
//
// Live output: workers save a running attempt's output (its last 64 KiB)
// about once a second while it grows; the job page, the events stream and
// the output endpoint's follow mode follow that, from any process on the
// same database.
package web

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/queuectl/queuectl/queue"
	"github.com/rs/zerolog"
)

// Config is what a Server needs.
type Config struct {
	Store queue.Store
	Log   zerolog.Logger
	// AdminToken may read and act; ViewerToken may read. With neither the
	// server is open to anyone who reaches it, so it must listen on
	// loopback only (see Listen).
	AdminToken  string
	ViewerToken string
	// Now is the clock (nil: the system clock).
	Now func() time.Time
	// Remainder completes a followed attempt's output once it ended
	// (executor.Remainder; queue.FollowParams). nil: the recorded output
	// past what was followed, without the cap's marker.
	Remainder func(output []byte, dropped, seen int64) []byte
}

// Server serves the dashboard, API, metrics and health checks.
type Server struct {
	cfg     Config
	now     func() time.Time
	inserts queue.Store // cfg.Store with concurrent enqueues stored together
	auth    *authenticator
	pages   *pages
	handler http.Handler
}

// New builds a server.
func New(cfg Config) (*Server, error) {
	if cfg.Store == nil {
		return nil, errors.New("web: no store")
	}
	s := &Server{cfg: cfg, now: cfg.Now, inserts: queue.CoalesceInserts(cfg.Store)}
	if s.now == nil {
		s.now = func() time.Time { return time.Now().UTC() }
	}
	var err error
	if s.auth, err = newAuthenticator(cfg.AdminToken, cfg.ViewerToken, cfg.Store, s.now); err != nil {
		return nil, err
	}
	if s.pages, err = newPages(); err != nil {
		return nil, err
	}
	s.handler = s.routes()
	return s, nil
}

// Handler returns the server's HTTP handler.
func (s *Server) Handler() http.Handler { return s.handler }

// ErrNeedsToken is returned by Listen for a non-loopback address when no
// token is configured; the caller says how to set one.
var ErrNeedsToken = errors.New("refusing to serve without a token on a non-loopback address")

// Listen opens the listening socket. Without a token only loopback
// addresses are allowed: anyone who can reach the port could act on the
// queue.
func Listen(addr string, hasToken bool) (net.Listener, error) {
	if !hasToken && !IsLoopback(addr) {
		return nil, fmt.Errorf("%w %s", ErrNeedsToken, addr)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		// "listen on ADDR: address already in use", naming the address once.
		var sys *os.SyscallError
		if errors.As(err, &sys) {
			err = sys.Err
		}
		return nil, fmt.Errorf("listen on %s: %w", addr, err)
	}
	return ln, nil
}

// IsLoopback reports whether addr (host:port) names only loopback
// interfaces; an empty host means every interface.
func IsLoopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	return isLoopbackHost(host)
}

func isLoopbackHost(host string) bool {
	host = strings.Trim(host, "[]")
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// shutdownKey holds, in every request's context, the context whose end
// shuts the server down.
type shutdownKey struct{}

// untilShutdown is r's context, also ended when the server shuts down:
// for event streams, followed output and waits, which would otherwise
// hold the shutdown as long as they may last.
func untilShutdown(r *http.Request) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(r.Context())
	shutdown, ok := r.Context().Value(shutdownKey{}).(context.Context)
	if !ok {
		return ctx, cancel
	}
	stop := context.AfterFunc(shutdown, cancel)
	return ctx, func() { stop(); cancel() }
}

// Serve serves on ln until ctx ends, then lets requests in flight finish
// for up to five seconds (event streams end at once).
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	srv := &http.Server{
		Handler:           s.handler,
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       30 * time.Second,
		WriteTimeout:      60 * time.Second, // event streams extend their own deadline
		IdleTimeout:       2 * time.Minute,
		MaxHeaderBytes:    64 << 10,
		// Requests in flight are not cancelled at shutdown: they finish.
		// Streams and waits end at once (untilShutdown).
		BaseContext: func(net.Listener) context.Context {
			return context.WithValue(context.WithoutCancel(ctx), shutdownKey{}, ctx)
		},
		ErrorLog: nil,
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return fmt.Errorf("serve http: %w", err)
	case <-ctx.Done():
	}
	stop, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(stop); err != nil {
		srv.Close()
	}
	if err := <-errc; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("serve http: %w", err)
	}
	return nil
}
