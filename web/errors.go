package web

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/queuectl/queuectl/internal/view"
	"github.com/queuectl/queuectl/queue"
)

// apiError is an error the API reports: an HTTP status, a stable code
// clients may switch on, a message for people, and the request field at
// fault when there is one.
type apiError struct {
	Status  int    `json:"-"`
	Code    string `json:"error"`
	Message string `json:"message"`
	Field   string `json:"field,omitempty"`
}

func (e *apiError) Error() string { return e.Message }

// The error codes. docs/http.md lists them; they never change meaning.
const (
	codeUnauthorized     = "unauthorized"       // 401: no valid token or session
	codeForbidden        = "forbidden"          // 403: the role may not do this
	codeCSRF             = "csrf_failed"        // 403: a browser request without the page's CSRF token
	codeNotFound         = "not_found"          // 404
	codeMethodNotAllowed = "method_not_allowed" // 405: the endpoint takes other methods (Allow)
	codeInvalid          = "invalid"            // 400: a parameter or body is wrong
	codeInvalidJob       = "invalid_job"        // 400: an enqueued job is wrong; field names it
	codeConflict         = "conflict"           // 409: not allowed in the job's state
	codeDuplicate        = "duplicate"          // 409: the job id is taken
	codeTooLarge         = "body_too_large"     // 413
	codeThrottled        = "throttled"          // 429: failed sign-ins from this address; wait
	codeUnavailable      = "unavailable"        // 503: the database does not answer
	codeInternal         = "internal"           // 500
)

// unavailableError is a store failure a request reports as 503
// unavailable with msg; the log gets the cause too.
type unavailableError struct {
	msg string
	err error
}

func (e *unavailableError) Error() string { return e.msg + ": " + e.err.Error() }
func (e *unavailableError) Unwrap() error { return e.err }

func errorf(status int, code, format string, a ...any) *apiError {
	return &apiError{Status: status, Code: code, Message: fmt.Sprintf(format, a...)}
}

// invalidField is a 400 invalid: a query parameter or body field is wrong
// (field names it; "" when the request as a whole is).
func invalidField(field, format string, a ...any) *apiError {
	return &apiError{Status: http.StatusBadRequest, Code: codeInvalid, Field: field, Message: fmt.Sprintf(format, a...)}
}

// invalidBecause is invalidField with the message of a queue.ErrInvalid
// error, without its "invalid: " prefix.
func invalidBecause(field string, err error) *apiError {
	return invalidField(field, "%s", strings.TrimPrefix(err.Error(), queue.ErrInvalid.Error()+": "))
}

// toAPIError maps an error from the store or a parser to an apiError.
func toAPIError(err error) *apiError {
	var ae *apiError
	var se *view.SpecError
	var tooLarge *http.MaxBytesError
	var unavailable *unavailableError
	switch {
	case errors.As(err, &ae):
		return ae
	case errors.As(err, &unavailable):
		return errorf(http.StatusServiceUnavailable, codeUnavailable, "%s", unavailable.msg)
	case errors.As(err, &se):
		return &apiError{Status: http.StatusBadRequest, Code: codeInvalidJob, Message: se.Msg, Field: se.Field}
	case errors.As(err, &tooLarge):
		return errorf(http.StatusRequestEntityTooLarge, codeTooLarge, "request body over %d bytes", tooLarge.Limit)
	case errors.Is(err, queue.ErrReadOnly): // a database served only to be read
		return errorf(http.StatusServiceUnavailable, codeUnavailable, "the database is read-only: it can be read here, not changed")
	case errors.Is(err, queue.ErrUnavailable): // busy, a full disk, a deadlock: for a while
		return errorf(http.StatusServiceUnavailable, codeUnavailable, "the database cannot take changes now (busy, its disk full, or a conflict with another transaction); nothing was changed: try again")
	case errors.Is(err, queue.ErrNotFound):
		return errorf(http.StatusNotFound, codeNotFound, "%s", err)
	case errors.Is(err, queue.ErrDuplicate):
		return errorf(http.StatusConflict, codeDuplicate, "%s", err)
	case errors.Is(err, queue.ErrConflict):
		return errorf(http.StatusConflict, codeConflict, "%s", err)
	case errors.Is(err, queue.ErrInvalid):
		return errorf(http.StatusBadRequest, codeInvalidJob, "%s", err)
	case errors.Is(err, context.DeadlineExceeded):
		return errorf(http.StatusServiceUnavailable, codeUnavailable, "the database did not answer in time")
	}
	return errorf(http.StatusInternalServerError, codeInternal, "internal error")
}

// writeJSON writes v as JSON with the given status.
func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.Encode(v)
}
