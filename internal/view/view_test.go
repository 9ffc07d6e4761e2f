package view

import (
	"errors"
	"testing"
	"time"

	"github.com/queuectl/queuectl/queue"
)

func TestParseJobJSONNamesTheField(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	tests := []struct {
		name, in, field string
	}{
		{"missing command", `{"id":"a"}`, "command"},
		{"unknown field", `{"command":"true","colour":1}`, "colour"},
		{"wrong type", `{"command":"true","priority":"high"}`, "priority"},
		{"negative retries", `{"command":"true","max_retries":-1}`, "max_retries"},
		{"bad timeout", `{"command":"true","timeout":"soon"}`, "timeout"},
		{"bad run_at", `{"command":"true","run_at":"tomorrow"}`, "run_at"},
		{"syntax", `{"command":`, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseJobJSON([]byte(tt.in), now)
			var se *SpecError
			if !errors.As(err, &se) {
				t.Fatalf("ParseJobJSON(%s) = %v, want a SpecError", tt.in, err)
			}
			if se.Field != tt.field {
				t.Errorf("field = %q, want %q (%s)", se.Field, tt.field, se.Msg)
			}
		})
	}
	n, err := ParseJobJSON([]byte(`{"command":"echo hi","run_at":"+1m","timeout":90}`), now)
	if err != nil {
		t.Fatal(err)
	}
	if !n.RunAt.Equal(now.Add(time.Minute)) || *n.Timeout != 90*time.Second {
		t.Errorf("got run_at %s timeout %s", n.RunAt, *n.Timeout)
	}
}

func TestNewStatusListsEveryState(t *testing.T) {
	s := NewStatus([]queue.Count{{Queue: "b", State: queue.StateDead, N: 2}, {Queue: "a", State: queue.StatePending, N: 3}},
		map[string]int{"a": 1}, 1)
	if len(s.Jobs) != len(queue.States())+1 || s.Jobs[queue.StateDead] != 2 || s.Queues["a"][queue.StatePending] != 2 ||
		s.Queues["a"][Scheduled] != 1 || s.Jobs[Scheduled] != 1 {
		t.Errorf("status = %+v", s)
	}
	if got := s.QueueNames(); len(got) != 2 || got[0] != "a" {
		t.Errorf("queue names = %v", got)
	}
}

func TestDescribeSchedule(t *testing.T) {
	for spec, want := range map[string]string{
		"*/5 * * * *":     "every 5 minutes",
		"0 3 * * *":       "every day at 03:00",
		"30 9,17 * * 1-5": "on weekdays at 09:30 and 17:30",
		"15 * * * *":      "every hour at minute 15",
		"0 0 1 * *":       "on day 1 of the month at 00:00",
		"@daily":          "every day at 00:00",
		"@every 90s":      "every 90s",
		"0 */2 * * *":     "every 2 hours at minute 0",
		"0 4 * * 0":       "every Sunday at 04:00",
		"1-5 * * * *":     "",
	} {
		if got := DescribeSchedule(spec); got != want {
			t.Errorf("DescribeSchedule(%q) = %q, want %q", spec, got, want)
		}
	}
}
