package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os/signal"
	"strings"
	"syscall"

	"github.com/queuectl/queuectl/config"
	"github.com/queuectl/queuectl/executor"
	"github.com/queuectl/queuectl/queue"
	"github.com/queuectl/queuectl/web"
	"github.com/rs/zerolog"
	"github.com/spf13/cobra"
)

// httpOptions say where and for whom the HTTP server listens.
type httpOptions struct {
	listen          string
	tokenFile       string
	viewerTokenFile string
	tokenSetting    string // where a token file is named: serve's flag or the file's attribute
}

func (a *app) serveCmd() *cobra.Command {
	o := httpOptions{tokenSetting: "--token-file"}
	cmd := &cobra.Command{
		Use:   "serve [--listen 127.0.0.1:8080]",
		Short: "Serve the web dashboard, the JSON API, /metrics and health checks",
		Long: `Serve the dashboard, the JSON API (/api/v1), Prometheus metrics (/metrics)
and health checks (/healthz, /readyz) for the database, without working any
jobs. See docs/http.md.

Tokens come from files (--token-file, --viewer-token-file) or from
QUEUECTL_HTTP_TOKEN and QUEUECTL_HTTP_VIEWER_TOKEN, never from the command
line. The admin token may act (enqueue, retry, cancel, discard, trigger); the
viewer token may read. Without any token the server listens on loopback
addresses only.`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			// Checked as the file's listen is, before anything else may fail
			// or decide on the address (loopback or not).
			if err := config.CheckListen(o.listen); err != nil {
				return usagef("--listen: %v", err)
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), syscall.SIGINT, syscall.SIGTERM)
			defer stop()
			log, err := a.logger(a.stderr)
			if err != nil {
				return err
			}
			st, err := a.store(ctx)
			if err != nil {
				return err
			}
			defer st.Close()
			wait, err := a.startHTTP(ctx, log, st, o)
			if err != nil {
				return err
			}
			return wait()
		},
	}
	cmd.Flags().StringVar(&o.listen, "listen", "127.0.0.1:8080", "address to listen on, host:port (an empty host: every interface)")
	cmd.Flags().StringVar(&o.tokenFile, "token-file", "", "file holding the admin token (default $QUEUECTL_HTTP_TOKEN)")
	cmd.Flags().StringVar(&o.viewerTokenFile, "viewer-token-file", "", "file holding the viewer token (default $QUEUECTL_HTTP_VIEWER_TOKEN)")
	return cmd
}

// httpTokens reads the admin and viewer tokens: from the files when given,
// else from the environment.
func (a *app) httpTokens(o httpOptions) (admin, viewer string, err error) {
	// A token is one line: neither an Authorization header nor the
	// sign-in form can carry a line break.
	read := func(path, env string) (string, error) {
		if path == "" {
			token := strings.TrimSpace(a.getenv(env))
			if strings.ContainsAny(token, "\r\n") {
				return "", usagef("%s holds more than one line: give one token", env)
			}
			return token, nil
		}
		token, err := config.ReadToken(path)
		var pe *fs.PathError
		switch {
		case errors.As(err, &pe):
			return "", usageError{fmt.Errorf("read token: %w", err)}
		case err != nil:
			return "", usagef("token file %s: %v", path, err)
		}
		return token, nil
	}
	if admin, err = read(o.tokenFile, "QUEUECTL_HTTP_TOKEN"); err != nil {
		return "", "", err
	}
	if viewer, err = read(o.viewerTokenFile, "QUEUECTL_HTTP_VIEWER_TOKEN"); err != nil {
		return "", "", err
	}
	if admin != "" && admin == viewer {
		return "", "", usagef("the admin and viewer tokens must differ")
	}
	return admin, viewer, nil
}

// startHTTP listens and serves until ctx ends; the returned wait reports
// how serving ended. A non-loopback address without a token is a usage
// error (exit 2); a busy port fails at once with the address.
func (a *app) startHTTP(ctx context.Context, log zerolog.Logger, st queue.Store, o httpOptions) (wait func() error, err error) {
	admin, viewer, err := a.httpTokens(o)
	if err != nil {
		return nil, err
	}
	srv, err := web.New(web.Config{Store: st, Log: log, AdminToken: admin, ViewerToken: viewer, Now: a.now,
		Remainder: executor.Remainder})
	if err != nil {
		return nil, err
	}
	ln, err := web.Listen(o.listen, admin != "" || viewer != "")
	if errors.Is(err, web.ErrNeedsToken) {
		return nil, usagef("%w: set a token file (%s) or listen on 127.0.0.1", err, o.tokenSetting)
	}
	if err != nil {
		return nil, err
	}
	log.Info().Str("url", "http://"+displayAddr(ln.Addr())).Bool("tokens", admin != "" || viewer != "").Msg("serving http")
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, ln) }()
	return func() error { return <-done }, nil
}

// displayAddr is a listening address a browser can open.
func displayAddr(addr net.Addr) string {
	tcp, ok := addr.(*net.TCPAddr)
	if !ok || !tcp.IP.IsUnspecified() {
		return addr.String()
	}
	return net.JoinHostPort("localhost", fmt.Sprint(tcp.Port))
}
