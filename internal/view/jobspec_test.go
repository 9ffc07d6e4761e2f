package view

import (
	"strings"
	"testing"
	"time"
)

// Durations in a job's JSON are strings such as "90s" or numbers of
// seconds, for the timeout and unique_for alike; an empty unique_for is
// none, as it always was.
func TestJobJSONDurations(t *testing.T) {
	now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		in              string
		timeout, unique time.Duration
		timeoutSet      bool
		err, errField   string
	}{
		{in: `{"command":"x","timeout":"90s"}`, timeout: 90 * time.Second, timeoutSet: true},
		{in: `{"command":"x","timeout":1.5}`, timeout: 1500 * time.Millisecond, timeoutSet: true},
		{in: `{"command":"x","timeout":null}`},
		{in: `{"command":"x","timeout":"none"}`, timeout: 0, timeoutSet: true},
		{in: `{"command":"x","timeout":0}`, timeout: 0, timeoutSet: true},
		{in: `{"command":"x","unique_key":"k","unique_for":"1h"}`, unique: time.Hour},
		{in: `{"command":"x","unique_key":"k","unique_for":3600}`, unique: time.Hour},
		{in: `{"command":"x","unique_key":"k","unique_for":""}`},
		{in: `{"command":"x","unique_key":"k","unique_for":null}`},
		{in: `{"command":"x","unique_key":"k","unique_for":"soon"}`, errField: "unique_for"},
		{in: `{"command":"x","unique_key":"k","unique_for":true}`, errField: "unique_for"},
		{in: `{"command":"x","timeout":"-1s"}`, errField: "timeout"},
	} {
		n, err := ParseJobJSON([]byte(tc.in), now)
		if tc.errField != "" {
			se, ok := err.(*SpecError)
			if !ok || se.Field != tc.errField {
				t.Errorf("%s: %v, want an error of field %s", tc.in, err, tc.errField)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", tc.in, err)
			continue
		}
		if (n.Timeout != nil) != tc.timeoutSet || n.Timeout != nil && *n.Timeout != tc.timeout || n.UniqueFor != tc.unique {
			t.Errorf("%s: timeout %v, unique_for %v; want %v (set %v), %v", tc.in, n.Timeout, n.UniqueFor, tc.timeout, tc.timeoutSet, tc.unique)
		}
	}
}

func TestParseRunAtSaysWhyItRefuses(t *testing.T) {
	now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	for in, want := range map[string]string{
		"+2562047h": "too far ahead",
		"+200y":     "not a delay",
		"+-5s":      "not a delay",
		"tomorrow":  "neither an RFC 3339 time nor a delay",
	} {
		if _, err := ParseRunAt(in, now); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ParseRunAt(%q): %v, want an error saying %q", in, err, want)
		}
	}
	if got, err := ParseRunAt("+36500d", now); err != nil || !got.Equal(now.Add(36500*24*time.Hour)) {
		t.Errorf("a delay of 100 years: %v, %v", got, err)
	}
}
