package view

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/queuectl/queuectl/internal/duration"
	"github.com/queuectl/queuectl/queue"
)

// JobSpec is the JSON form of a job to enqueue. Unknown fields are errors.
type JobSpec struct {
	ID         string            `json:"id"`
	Queue      string            `json:"queue"`
	Command    *string           `json:"command"`
	Priority   int               `json:"priority"`
	MaxRetries *int              `json:"max_retries"`
	Timeout    json.RawMessage   `json:"timeout"`
	RunAt      string            `json:"run_at"`
	Env        map[string]string `json:"env"`
	Dir        string            `json:"dir"`
	Labels     map[string]string `json:"labels"`
	After      []string          `json:"after"`
	UniqueKey  string            `json:"unique_key"`
	UniqueFor  json.RawMessage   `json:"unique_for"`
}

// SpecError is a job JSON that cannot be enqueued; Field names the JSON
// field at fault ("" when the document as a whole is).
type SpecError struct {
	Field string
	Msg   string
}

func (e *SpecError) Error() string { return e.Msg }

func specErrorf(field, format string, a ...any) error {
	return &SpecError{Field: field, Msg: fmt.Sprintf(format, a...)}
}

// ParseJobJSON decodes one job object strictly; run_at delays count from now.
func ParseJobJSON(b []byte, now time.Time) (queue.NewJob, error) {
	if !utf8.Valid(b) {
		// The decoder would silently replace the bad bytes in an id or env.
		return queue.NewJob{}, specErrorf("", "invalid job JSON: not valid UTF-8")
	}
	var s JobSpec
	if e := DecodeObject(b, &s, JobFields, "env", "labels"); e != nil {
		return queue.NewJob{}, specErrorf(e.Field, "invalid job JSON: %s", e.Msg)
	}
	if s.Command == nil || strings.TrimSpace(*s.Command) == "" {
		return queue.NewJob{}, specErrorf("command", `missing "command"`)
	}
	n := queue.NewJob{ID: s.ID, Queue: s.Queue, Command: *s.Command, Priority: s.Priority, MaxRetries: s.MaxRetries, Env: s.Env, Dir: s.Dir,
		Labels: s.Labels, After: s.After, UniqueKey: s.UniqueKey}
	if s.MaxRetries != nil && *s.MaxRetries < 0 {
		return n, specErrorf("max_retries", `"max_retries" %d: must be 0 or more`, *s.MaxRetries)
	}
	if d, ok, err := durationField(s.Timeout); err != nil {
		return n, specErrorf("timeout", `"timeout": %s`, err)
	} else if ok {
		n.Timeout = &d
	}
	if s.RunAt != "" {
		t, err := ParseRunAt(s.RunAt, now)
		if err != nil {
			return n, specErrorf("run_at", `"run_at": %s`, err)
		}
		n.RunAt = t
	}
	if string(s.UniqueFor) == `""` {
		s.UniqueFor = nil // none, as it always was
	}
	if d, ok, err := durationField(s.UniqueFor); err != nil {
		return n, specErrorf("unique_for", `"unique_for": %s`, err)
	} else if ok {
		n.UniqueFor = d
	}
	return n, nil
}

// durationField reads a duration field of a job's JSON: a string such as
// "90s", or a number of seconds; ok is false when it is absent or null.
func durationField(raw json.RawMessage) (d time.Duration, ok bool, err error) {
	if len(raw) == 0 || string(raw) == "null" {
		return 0, false, nil
	}
	var text string
	if json.Unmarshal(raw, &text) != nil {
		text = string(raw) // a number of seconds
	}
	d, err = ParseTimeout(text)
	return d, err == nil, err
}

// JSONError describes an error of decoding a JSON object without Go's
// type names, and names the field at fault when it can.
func JSONError(err error) (field, msg string) {
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syn):
		return "", fmt.Sprintf("%s at byte %d", syn.Error(), syn.Offset)
	case errors.As(err, &typ) && typ.Field == "":
		return "", fmt.Sprintf("must be an object, not %s", typ.Value)
	case errors.As(err, &typ) && (typ.Field == "env" || typ.Field == "labels") && typ.Type.Kind() == reflect.String:
		// A value inside the object, which the error does not name.
		return typ.Field, fmt.Sprintf("field %q must be an object of strings; a value is %s", typ.Field, typ.Value)
	case errors.As(err, &typ):
		return typ.Field, fmt.Sprintf("field %q must be %s, not %s", typ.Field, jsonKind(typ.Type), typ.Value)
	case errors.Is(err, io.EOF):
		return "", "empty input"
	}
	msg = strings.TrimPrefix(err.Error(), "json: ")
	if rest, ok := strings.CutPrefix(msg, "unknown field "); ok {
		field = strings.Trim(rest, `"`)
	}
	return field, msg
}

// jsonKind names a Go type the way a JSON user knows it.
func jsonKind(t reflect.Type) string {
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "a whole number"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Bool:
		return "true or false"
	case reflect.Map, reflect.Struct:
		return "an object"
	case reflect.Slice, reflect.Array:
		return "an array"
	case reflect.Pointer:
		return jsonKind(t.Elem())
	}
	return "another type"
}

// ParseTimeout parses a job timeout: seconds or a duration such as 90s,
// or "none" (0), as config set and show write it. A negative one is a
// duration all the same, and is refused as negative.
func ParseTimeout(s string) (time.Duration, error) {
	if strings.TrimSpace(s) == "none" {
		return 0, nil
	}
	if d, err := queue.ParseDuration(s); err == nil {
		return d, nil
	}
	// Refused: say why, from the syntax alone.
	switch d, err := duration.Parse(s); {
	case err != nil || strings.TrimSpace(s) == "":
		return 0, fmt.Errorf("%q is not a duration (use seconds or e.g. 90s, 5m)", s)
	case d < 0:
		return 0, fmt.Errorf("%q must not be negative", s)
	default:
		return 0, fmt.Errorf("%q is too long: at most 100 years, and a timeout at most 30d", s)
	}
}

// ParseRunAt accepts an RFC 3339 time or a delay "+30s", "+5m", "+2h", "+1d".
func ParseRunAt(s string, now time.Time) (time.Time, error) {
	if rest, ok := strings.CutPrefix(s, "+"); ok {
		d, err := queue.ParseDuration(rest)
		if err != nil || d < 0 {
			if d, err := duration.Parse(rest); err == nil && d > 0 {
				return time.Time{}, fmt.Errorf("%q is too far ahead: a delay is at most 100 years", s)
			}
			return time.Time{}, fmt.Errorf("%q is not a delay (use e.g. +30s, +5m, +2h, +1d)", s)
		}
		return now.Add(d), nil
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}, fmt.Errorf("%q is neither an RFC 3339 time nor a delay such as +30s", s)
	}
	return t.UTC(), nil
}
