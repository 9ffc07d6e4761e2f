package web

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// maxBody bounds every request body; the largest legitimate one is a job
// with a long command and environment.
const maxBody = 1 << 20

// requestTimeout bounds the store calls of one request.
const requestTimeout = 15 * time.Second

// routes wires every endpoint.
func (s *Server) routes() http.Handler {
	mux := http.NewServeMux()
	// Health: no token, ever.
	mux.HandleFunc("GET /healthz", s.healthz)
	mux.HandleFunc("GET /readyz", s.readyz)
	mux.Handle("GET /metrics", s.need(roleViewer, s.metricsHandler()))

	// The JSON API.
	get := func(pattern string, fn apiFunc) { mux.Handle("GET "+pattern, s.api(roleViewer, fn)) }
	act := func(method, pattern string, fn apiFunc) { mux.Handle(method+" "+pattern, s.api(roleAdmin, fn)) }
	get("/api/v1/status", s.apiStatus)
	get("/api/v1/stats", s.apiStats)
	get("/api/v1/jobs", s.apiListJobs)
	get("/api/v1/jobs/{id}", s.apiGetJob)
	mux.Handle("GET /api/v1/jobs/{id}/output", s.outputHandler())
	mux.Handle("GET /api/v1/jobs/{id}/events", s.need(roleViewer, http.HandlerFunc(s.jobEvents)))
	get("/api/v1/queues", s.apiQueues)
	get("/api/v1/cron", s.apiCron)
	get("/api/v1/workers", s.apiWorkers)
	act("POST", "/api/v1/jobs", s.apiEnqueue)
	act("POST", "/api/v1/jobs/{id}/retry", s.apiRetry)
	act("POST", "/api/v1/jobs/{id}/cancel", s.apiCancel)
	act("DELETE", "/api/v1/jobs/{id}", s.apiDiscard)
	act("POST", "/api/v1/dlq/retry", s.apiDLQRetry)
	act("POST", "/api/v1/dlq/discard", s.apiDLQDiscard)
	act("POST", "/api/v1/cron/{name}/trigger", s.apiTrigger)
	get("/api/v1/jobs/{id}/wait", s.apiWaitJob)
	act("POST", "/api/v1/queues/{name}/pause", s.apiPauseQueue)
	act("POST", "/api/v1/queues/{name}/resume", s.apiResumeQueue)
	act("PUT", "/api/v1/queues/{name}/limits", s.apiQueueLimits)
	mux.Handle("/api/", s.api(roleViewer, func(w http.ResponseWriter, r *http.Request) (any, error) {
		if allow := allowedMethods(mux, r); allow != "" {
			w.Header().Set("Allow", allow)
			return nil, errorf(http.StatusMethodNotAllowed, codeMethodNotAllowed, "%s takes %s", r.URL.Path, allow)
		}
		return nil, errorf(http.StatusNotFound, codeNotFound, "no such endpoint")
	}))

	s.pageRoutes(mux)
	return s.secure(mux)
}

// allowedMethods lists the methods an endpoint at r's path takes ("" for
// no endpoint): the catch-all patterns /api/ and / would otherwise answer
// a method the endpoint does not take as a missing endpoint.
func allowedMethods(mux *http.ServeMux, r *http.Request) string {
	var allow []string
	for _, m := range []string{http.MethodDelete, http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut} {
		probe := &http.Request{Method: m, URL: r.URL, Host: r.Host}
		if _, pattern := mux.Handler(probe); pattern != "" && pattern != "/api/" && pattern != "/" {
			allow = append(allow, m)
		}
	}
	return strings.Join(allow, ", ")
}

// secure sets the headers every answer carries, bounds bodies, and (without
// tokens) refuses requests addressed to a name that is not loopback, which
// is what a DNS-rebinding page would send.
func (s *Server) secure(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "+
			"connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'")
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("X-Frame-Options", "DENY")
		h.Set("Referrer-Policy", "same-origin")
		h.Set("Cache-Control", "no-store")
		if isTLS(r) {
			h.Set("Strict-Transport-Security", "max-age=31536000")
		}
		if s.auth.open() && !isLoopbackHost(hostOnly(r.Host)) {
			writeJSON(w, http.StatusMisdirectedRequest, errorf(http.StatusMisdirectedRequest, codeForbidden,
				"this server has no token and answers only to loopback host names"))
			return
		}
		r.Body = http.MaxBytesReader(w, r.Body, maxBody)
		next.ServeHTTP(w, r)
	})
}

func hostOnly(hostport string) string {
	if i := strings.LastIndex(hostport, ":"); i >= 0 && !strings.HasSuffix(hostport, "]") {
		return hostport[:i]
	}
	return hostport
}

type ctxKey struct{}

// need admits requests whose identity has at least role min; state-changing
// methods must also pass the CSRF check, with the token in the X-CSRF-Token
// header. API requests get JSON errors; pages send a browser to the sign-in
// page.
func (s *Server) need(min role, next http.Handler) http.Handler { return s.guard(min, false, next) }

// needForm is need for the dashboard's own forms: their CSRF token may also
// come in the form field csrf.
func (s *Server) needForm(min role, next http.Handler) http.Handler { return s.guard(min, true, next) }

func (s *Server) guard(min role, form bool, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id, err := s.auth.identify(r)
		if err != nil && r.Context().Err() != nil {
			return // the client left while its session was checked
		}
		if err != nil {
			if errors.Is(err, errThrottled) {
				w.Header().Set("Retry-After", "8")
			}
			s.fail(w, r, err)
			return
		}
		// The error pages below know who asked (navigation, CSRF token).
		r = r.WithContext(context.WithValue(r.Context(), ctxKey{}, id))
		if id.role == roleNone {
			if wantsHTML(r) {
				http.Redirect(w, r, "/login?"+url.Values{"next": {safeNext(r.URL.RequestURI())}}.Encode(), http.StatusSeeOther)
				return
			}
			w.Header().Set("WWW-Authenticate", `Bearer realm="queuectl"`)
			if id.bearer {
				s.fail(w, r, errorf(http.StatusUnauthorized, codeUnauthorized, "wrong token in the Authorization header"))
				return
			}
			s.fail(w, r, errorf(http.StatusUnauthorized, codeUnauthorized, "sign in or send Authorization: Bearer TOKEN"))
			return
		}
		if id.role < min {
			s.fail(w, r, errorf(http.StatusForbidden, codeForbidden, "the %s role may not do this", id.role))
			return
		}
		if r.Method != http.MethodGet && r.Method != http.MethodHead && !s.auth.checkCSRF(r, id, form) {
			// A form read past the limit of a body (its reader says so
			// again) held no token to find: say that, not that the token
			// is missing.
			if form {
				var tooLarge *http.MaxBytesError
				if _, err := r.Body.Read(make([]byte, 1)); errors.As(err, &tooLarge) {
					s.fail(w, r, tooLarge)
					return
				}
			}
			s.fail(w, r, errorf(http.StatusForbidden, codeCSRF, "missing or wrong CSRF token (reload the page)"))
			return
		}
		next.ServeHTTP(w, r)
	})
}

// identityOf returns the identity need stored.
func identityOf(r *http.Request) identity {
	id, _ := r.Context().Value(ctxKey{}).(identity)
	return id
}

// wantsHTML tells a browser's page request from an API call.
func wantsHTML(r *http.Request) bool {
	return !strings.HasPrefix(r.URL.Path, "/api/") && r.URL.Path != "/metrics" &&
		strings.Contains(r.Header.Get("Accept"), "text/html")
}

// fail reports an error as JSON, or as a page for a browser.
func (s *Server) fail(w http.ResponseWriter, r *http.Request, err error) {
	ae := toAPIError(err)
	if ae.Status >= 500 {
		s.cfg.Log.Error().Err(err).Str("method", r.Method).Str("path", r.URL.Path).Msg("request failed")
	}
	if wantsHTML(r) {
		s.errorPage(w, r, errorData{apiError: ae, SignOutAgain: errors.Is(err, errSignOutUnrecorded)})
		return
	}
	writeJSON(w, ae.Status, ae)
}

// apiFunc is one API endpoint: it decodes its request, calls the store and
// returns what to encode (or an error to report).
type apiFunc func(w http.ResponseWriter, r *http.Request) (any, error)

// created wraps a response that answers 201 Created.
type created struct{ v any }

// api adapts an apiFunc: role and CSRF checks, a deadline on the store
// calls, JSON in and out, errors as apiError.
func (s *Server) api(min role, fn apiFunc) http.Handler {
	return s.need(min, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), requestTimeout)
		defer cancel()
		v, err := fn(w, r.WithContext(ctx))
		if err != nil {
			s.fail(w, r, err)
			return
		}
		if _, ok := v.(written); ok {
			return
		}
		status := http.StatusOK
		if c, ok := v.(created); ok {
			status, v = http.StatusCreated, c.v
		}
		writeJSON(w, status, v)
	}))
}

func (s *Server) healthz(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
}

func (s *Server) readyz(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
	defer cancel()
	if _, err := s.cfg.Store.GetConfig(ctx); err != nil {
		if !errors.Is(err, context.Canceled) {
			s.cfg.Log.Warn().Err(err).Msg("readiness check failed")
		}
		writeJSON(w, http.StatusServiceUnavailable, errorf(http.StatusServiceUnavailable, codeUnavailable, "the database does not answer"))
		return
	}
	writeJSON(w, http.StatusOK, map[string]string{"status": "ready"})
}
