package web

import (
	"context"
	"errors"
	"net/http"
	"strings"

	"github.com/queuectl/queuectl/queue"
)

// loginPage shows the sign-in form (or, without tokens, sends the browser on).
func (s *Server) loginPage(w http.ResponseWriter, r *http.Request) {
	if s.auth.open() {
		http.Redirect(w, r, "/", http.StatusSeeOther)
		return
	}
	s.render(w, r, http.StatusOK, "login", page{Title: "Sign in", Data: loginData{Next: safeNext(r.URL.Query().Get("next"))}})
}

type loginData struct {
	Next  string
	Error string
}

// login checks a token typed into the sign-in form and sets the session
// cookie. Each failure from an address doubles the wait before the next
// check from it (see throttle); the comparison takes constant time.
func (s *Server) login(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, 4<<10)
	if origin := r.Header.Get("Origin"); origin != "" && !sameOrigin(origin, r) {
		http.Error(w, "cross-site sign-in refused", http.StatusForbidden)
		return
	}
	addr := clientAddr(r)
	next := safeNext(r.PostFormValue("next"))
	// Trimmed as a bearer token and the token file are: a pasted token
	// often carries a line break or a space.
	rl, checked := s.auth.signIn(r.Context(), addr, strings.TrimSpace(r.PostFormValue("token")))
	if !checked {
		w.Header().Set("Retry-After", "8")
		s.render(w, r, http.StatusTooManyRequests, "login", page{Title: "Sign in",
			Data: loginData{Next: next, Error: "Too many failed sign-ins from this address: wait a few seconds and try again."}})
		return
	}
	if rl == roleNone {
		s.cfg.Log.Warn().Str("remote", addr).Msg("failed sign-in")
		s.render(w, r, http.StatusUnauthorized, "login", page{Title: "Sign in",
			Data: loginData{Next: next, Error: "That token is not valid."}})
		return
	}
	value, err := s.auth.newSession(rl)
	if err != nil {
		http.Error(w, "internal error", http.StatusInternalServerError)
		return
	}
	http.SetCookie(w, &http.Cookie{Name: sessionCookie, Value: value, Path: "/", MaxAge: int(sessionTTL.Seconds()),
		HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: isTLS(r)})
	s.cfg.Log.Info().Str("remote", addr).Str("role", rl.String()).Msg("signed in")
	http.Redirect(w, r, next, http.StatusSeeOther)
}

// logout ends the browser's session: the cookie is cleared, and the
// session is refused from now on, by every process sharing the store,
// should its value be replayed. When the store cannot record that, the
// cookie stays, so that signing out again can.
func (s *Server) logout(w http.ResponseWriter, r *http.Request) {
	if c, err := r.Cookie(sessionCookie); err == nil {
		ctx, cancel := context.WithTimeout(r.Context(), requestTimeout)
		defer cancel()
		err := s.auth.revoke(ctx, c.Value)
		if errors.Is(err, queue.ErrReadOnly) {
			// Signing out again cannot record it either: the session ends
			// here, and the database's other readers cannot be told.
			s.cfg.Log.Warn().Err(err).Msg("sign-out refused by this process only: the database is read-only")
		} else if err != nil {
			s.fail(w, r, err)
			return
		}
	}
	http.SetCookie(w, &http.Cookie{Name: sessionCookie, Value: "", Path: "/", MaxAge: -1,
		HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: isTLS(r)})
	http.Redirect(w, r, "/login", http.StatusSeeOther)
}
