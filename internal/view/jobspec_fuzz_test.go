package view

import (
	"bytes"
	"encoding/json"
	"errors"
	"maps"
	"strings"
	"testing"
	"time"

	"github.com/queuectl/queuectl/queue"
)

// jobFields are the fields of a job as users write them in JSON.
var jobFields = []string{"id", "queue", "command", "priority", "max_retries", "timeout", "run_at", "env", "dir",
	"backoff_base", "max_backoff"}

// FuzzJobJSON feeds the enqueue path (ParseJobJSON, then the validation of
// queue.NewJob.Resolve) arbitrary input. It must never panic; a rejected
// job gives one line that names the field at fault (or says the document
// itself is not a job object); an accepted job, written back as JSON and
// read again, is the same job. Seeds: valid jobs and the bad inputs that
// enqueue must refuse.
func FuzzJobJSON(f *testing.F) {
	for _, s := range []string{
		`{"command":"true"}`,
		`{"id":"a","queue":"q","command":"echo hi","priority":5,"max_retries":2,"timeout":"90s","run_at":"2030-01-02T03:04:05Z","env":{"K":"v"},"dir":"/tmp"}`,
		`{"command":"x","timeout":1.5,"run_at":"+5m"}`,
		`{"command":"x","env":{"":"v"}}`,
		`{"command":"x","env":{"A=B":"v"}}`,
		`{"command":"x","env":{"A\u0000":"v"}}`,
		`{"command":"x","env":{"A":"v\u0000"}}`,
		`{"command":"x","env":{"QUEUECTL_JOB_ID":"other"}}`,
		`{"command":"x","env":{"QUEUECTL_ATTEMPT":"1"}}`,
		`{"command":"x","dir":"relative/path"}`,
		`{"command":"x","dir":"/tmp/\u0000"}`,
		`{"command":"x","id":"bad\u0007id"}`,
		`{"command":"x","id":"a b"}`,
		"{\"command\":\"x\",\"id\":\"\xff\xfe\"}",
		`{"command":"x","timeout":"500us"}`,
		`{"command":"x","timeout":"0"}`,
		`{"command":"x","timeout":"100000d"}`,
		`{"command":"x","timeout":-1}`,
		`{"command":"x","run_at":"10000-01-01T00:00:00Z"}`,
		`{"command":"x","run_at":"9999-12-31T23:59:59Z"}`,
		`{"command":"x","run_at":"+99999999d"}`,
		`{"command":"x","max_retries":-1}`,
		`{"command":"x","priority":1e10}`,
		`{"command":"x\u0000"}`,
		`{"command":"  "}`,
		`{"command":"x","state":"completed"}`,
		`{"Command":"x"}`,
		`{"command":"x","command":"y"}`,
		`{"command":"x","comm\u0061nd":"y"}`,
		`{"command":"x\\\"}","env":{"command":"a","Command":"b"}}`,
		`{"command":"x"}]`,
		`{"command":"x","env":{"A":"1","\u0041":"2"}}`,
		`{"command":"x","labels":{"a":null},"env":{"n":"null"}}`,
		`{"command":"x","env":{"A":1}}`,
		`{"command":"x"} {"command":"y"}`,
		`[{"command":"x"}]`,
		`{}`,
		``,
		`null`,
		`{"command":`,
	} {
		f.Add([]byte(s))
	}
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, b []byte) {
		n, err := ParseJobJSON(b, now)
		if err == nil {
			checkNames(t, b)
		}
		var j *queue.Job
		if err == nil {
			j, err = n.Resolve(queue.DefaultSettings(), now)
		}
		if err != nil {
			checkRejection(t, b, err)
			return
		}
		again := roundTrip(t, j, now)
		if again.ID != j.ID || again.Queue != j.Queue || again.Command != j.Command || again.Priority != j.Priority ||
			again.MaxRetries != j.MaxRetries || again.Timeout != j.Timeout || !again.RunAt.Equal(j.RunAt) ||
			again.Dir != j.Dir || !maps.Equal(again.Env, j.Env) {
			t.Fatalf("round trip of %q changed the job:\n%+v\n%+v", b, j, again)
		}
	})
}

// checkRejection asserts that err is one line naming a field, or a
// document-level error of the decoder.
func checkRejection(t *testing.T, b []byte, err error) {
	t.Helper()
	msg := err.Error()
	if msg == "" || strings.ContainsAny(msg, "\n\r") {
		t.Fatalf("input %q: error is not one line: %q", b, msg)
	}
	var spec *SpecError
	if errors.As(err, &spec) {
		if spec.Field == "" && !strings.HasPrefix(msg, "invalid job JSON: ") {
			t.Fatalf("input %q: document-level error %q does not say so", b, msg)
		}
		if spec.Field != "" && !strings.Contains(msg, spec.Field) {
			t.Fatalf("input %q: error %q does not name field %q", b, msg, spec.Field)
		}
		return
	}
	if !errors.Is(err, queue.ErrInvalid) {
		t.Fatalf("input %q: validation error %q is not ErrInvalid", b, msg)
	}
	for _, f := range jobFields {
		if strings.Contains(msg, f) {
			return
		}
	}
	t.Fatalf("input %q: error %q names no field", b, msg)
}

// checkNames asserts that the member names of an accepted job object, read
// by the decoder's tokens, are field names exactly, each given once.
func checkNames(t *testing.T, b []byte) {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(b))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return // null: no members
	}
	seen := map[string]bool{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			t.Fatalf("input %q accepted, but its tokens: %v", b, err)
		}
		name := tok.(string)
		if !JobFields[name] || seen[name] {
			t.Fatalf("input %q accepted with the member %q (known %v, seen before %v)", b, name, JobFields[name], seen[name])
		}
		seen[name] = true
		var value json.RawMessage
		if err := dec.Decode(&value); err != nil {
			t.Fatalf("input %q accepted, but its member %q: %v", b, name, err)
		}
		if name == "env" || name == "labels" {
			checkStringObject(t, b, name, value)
		}
	}
}

// checkStringObject asserts that an accepted env or labels, read by the
// decoder's tokens, gives each key once and no null value.
func checkStringObject(t *testing.T, b []byte, name string, value json.RawMessage) {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(value))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return // null: none
	}
	keys := map[string]bool{}
	for dec.More() {
		k, _ := dec.Token()
		v, _ := dec.Token()
		key, _ := k.(string)
		if keys[key] || v == nil {
			t.Fatalf("input %q accepted with %s key %q twice or null (%v)", b, name, key, v)
		}
		keys[key] = true
	}
}

// roundTrip writes a resolved job as enqueue JSON, reads it and resolves
// it again.
func roundTrip(t *testing.T, j *queue.Job, now time.Time) *queue.Job {
	t.Helper()
	cmd := j.Command
	spec := JobSpec{ID: j.ID, Queue: j.Queue, Command: &cmd, Priority: j.Priority, MaxRetries: &j.MaxRetries,
		RunAt: j.RunAt.Format(time.RFC3339Nano), Env: j.Env, Dir: j.Dir}
	if j.Timeout > 0 {
		spec.Timeout, _ = json.Marshal(j.Timeout.String())
	}
	b, err := json.Marshal(spec)
	if err != nil {
		t.Fatalf("marshal %+v: %v", j, err)
	}
	n, err := ParseJobJSON(b, now)
	if err != nil {
		t.Fatalf("accepted job written back as %s is rejected: %v", b, err)
	}
	again, err := n.Resolve(queue.DefaultSettings(), now)
	if err != nil {
		t.Fatalf("accepted job written back as %s does not resolve: %v", b, err)
	}
	return again
}
