package view

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/queuectl/queuectl/queue"
)

func TestParseTimeout(t *testing.T) {
	tests := []struct {
		in   string
		want time.Duration
		err  string
	}{
		{"90", 90 * time.Second, ""},
		{"1h30m", 90 * time.Minute, ""},
		{"1d", 24 * time.Hour, ""},
		{"0", 0, ""},
		{"-5s", 0, `"-5s" must not be negative`},
		{" -1d ", 0, `" -1d " must not be negative`},
		{"-5", 0, `"-5" must not be negative`},
		{"soon", 0, `"soon" is not a duration`},
		{"-soon", 0, `"-soon" is not a duration`},
		{"--5s", 0, `"--5s" is not a duration`},
		{"-", 0, `"-" is not a duration`},
		{"40000d", 0, `"40000d" is too long: at most 100 years`},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := ParseTimeout(tt.in)
			switch {
			case tt.err == "" && (err != nil || got != tt.want):
				t.Errorf("ParseTimeout(%q) = %s, %v; want %s", tt.in, got, err, tt.want)
			case tt.err != "" && (err == nil || !strings.Contains(err.Error(), tt.err)):
				t.Errorf("ParseTimeout(%q) = %s, %v; want an error saying %s", tt.in, got, err, tt.err)
			}
		})
	}
}

func TestParseJobJSONNamesTheField(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	tests := []struct {
		name, in, field, msg string
	}{
		{"missing command", `{"id":"a"}`, "command", ""},
		{"unknown field", `{"command":"true","colour":1}`, "colour", ""},
		{"name in another case", `{"Command":"true"}`, "Command", `unknown field "Command" (field names are lower case: "command")`},
		{"name given twice", `{"command":"true","command":"rm -rf ~"}`, "command", `field "command" is given twice`},
		{"name given twice, once escaped", `{"command":"true","comm\u0061nd":"rm -rf ~"}`, "command", `field "command" is given twice`},
		{"a closing bracket after the object", `{"command":"true"}]`, "", "trailing data after the object"},
		{"wrong type", `{"command":"true","priority":"high"}`, "priority", `field "priority" must be a whole number, not string`},
		{"negative retries", `{"command":"true","max_retries":-1}`, "max_retries", ""},
		{"bad timeout", `{"command":"true","timeout":"soon"}`, "timeout", ""},
		{"bad run_at", `{"command":"true","run_at":"tomorrow"}`, "run_at", ""},
		{"syntax", `{"command":`, "", ""},
		{"not an object", `[1,2]`, "", "must be an object, not array"},
		{"env value not a string", `{"command":"true","env":{"A":1}}`, "env", `field "env" must be an object of strings; a value is number`},
		{"label value not a string", `{"command":"true","labels":{"a":true}}`, "labels", `field "labels" must be an object of strings; a value is bool`},
		{"env name given twice", `{"command":"true","env":{"A":"1","A":"2"}}`, "env", `field "env" has the key "A" twice`},
		{"env name given twice, once escaped", `{"command":"true","env":{"PATH":"/bin","P\u0041TH":"/tmp"}}`, "env", `field "env" has the key "PATH" twice`},
		{"label key given twice", `{"command":"true","labels":{"team":"web","team":"infra"}}`, "labels", `field "labels" has the key "team" twice`},
		{"env value null", `{"command":"true","env":{"A":null}}`, "env", `field "env" must be an object of strings; the value of "A" is null`},
		{"label value null", `{"command":"true","labels":{"a":null}}`, "labels", `field "labels" must be an object of strings; the value of "a" is null`},
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
			if tt.msg != "" && se.Msg != "invalid job JSON: "+tt.msg {
				t.Errorf("message %q, want %q", se.Msg, tt.msg)
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

// Only the job object's own member names are checked: names inside env,
// labels and strings are data, whatever they look like.
func TestParseJobJSONChecksOnlyTheJobsOwnNames(t *testing.T) {
	in := `{ "command" : "echo \"}{,\"command\":\"" , "env":{"command":"a","Command":"b"},` +
		`"labels":{"id":"x"}, "after":["command"], "id" :"j"}`
	n, err := ParseJobJSON([]byte(in), time.Now())
	if err != nil {
		t.Fatalf("ParseJobJSON(%s): %v", in, err)
	}
	if n.ID != "j" || n.Command != `echo "}{,"command":"` || n.Env["Command"] != "b" || n.Labels["id"] != "x" {
		t.Fatalf("ParseJobJSON(%s) = %+v", in, n)
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
		// Day of month and day of week both restricted: either fires.
		"0 0 13 * 5":  "on day 13 of the month and on every Friday at 00:00",
		"0 9 1 * 1-5": "on day 1 of the month and on weekdays at 09:00",
		// Only the month restricted: every day of it.
		"0 0 * 1 *":    "every day in January at 00:00",
		"*/5 * * 12 *": "every 5 minutes in December",
	} {
		if got := DescribeSchedule(spec); got != want {
			t.Errorf("DescribeSchedule(%q) = %q, want %q", spec, got, want)
		}
	}
}

// Stats count a window's attempts from its run-time histograms: failures
// are the failed class, completions of the last hour are per minute of the
// span they cover (at least an hour), and five of the slowest are listed.
func TestNewStatsFromRunTimes(t *testing.T) {
	now := time.Date(2026, 5, 1, 12, 30, 30, 0, time.UTC)
	run := func(q string, class queue.Outcome, n int64, us int64) queue.RunTimeCount {
		return queue.RunTimeCount{Queue: q, Class: class, LE: queue.RunTimeBucket(us), N: n, Min: us, Max: us}
	}
	in := StatsInput{
		Counts: []queue.Count{{Queue: "a", State: queue.StateCompleted, N: 7}, {Queue: "c", State: queue.StatePending, N: 1}},
		Runs: []queue.RunTimeCount{run("a", queue.OutcomeSucceeded, 6, 2_000_000), run("a", queue.OutcomeFailed, 3, 9_000_000),
			run("b", queue.OutcomeInterrupted, 1, 500_000)},
		LastHour:  []queue.RunTimeCount{run("a", queue.OutcomeSucceeded, 606, 2_000_000), run("a", queue.OutcomeFailed, 50, 9_000_000)},
		HourStart: now.Add(-time.Hour).Truncate(time.Minute), // 60.5 minutes ago
	}
	for i := range 7 {
		in.Slowest = append(in.Slowest, queue.AttemptStat{JobID: fmt.Sprint("s", i), Queue: "a", Duration: time.Duration(9-i) * time.Second})
	}
	s := NewStats(in, 24*time.Hour, now)
	if s.Window != "1d" || s.Total.Attempts != 10 || s.Total.Failed != 3 || s.Total.FailureRate != 0.3 || s.Total.Total() != 8 {
		t.Fatalf("total: %+v", s.Total)
	}
	if s.Total.LastHour != 606 || s.Total.PerMinuteHour != 10 { // 606 / 60.5
		t.Fatalf("last hour: %d, %.1f a minute", s.Total.LastHour, s.Total.PerMinuteHour)
	}
	if r := s.Total.RunTimeMS; r.Min != 500 || r.P50 != 2000 || r.P95 != 9000 || r.Max != 9000 {
		t.Fatalf("run times: %+v", r)
	}
	if len(s.Queues) != 3 || s.Queues[1].Queue != "b" || s.Queues[1].Failed != 0 || s.Queues[2].Jobs["pending"] != 1 {
		t.Fatalf("queues: %+v %+v %+v", s.Queues[0], s.Queues[1], s.Queues[2])
	}
	if len(s.Slowest) != 5 || s.Slowest[0].DurationMS != 9000 || s.Slowest[4].ID != "s4" {
		t.Fatalf("slowest: %+v", s.Slowest)
	}
	// A window shorter than an hour: its completions per minute of an hour.
	in.HourStart = now.Add(-10 * time.Minute).Truncate(time.Minute)
	if s := NewStats(in, 10*time.Minute, now); s.Total.PerMinuteHour != 10.1 { // 606 / 60
		t.Fatalf("10m window: %.1f a minute", s.Total.PerMinuteHour)
	}
}

// A list filters on a stored state or on scheduled (pending, due later);
// an unknown name is refused with every name it could have been.
func TestFilterState(t *testing.T) {
	now := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	var p queue.ListParams
	if err := FilterState(&p, "scheduled", now); err != nil || len(p.States) != 1 || p.States[0] != queue.StatePending || !p.DueAfter.Equal(now) {
		t.Errorf("scheduled: %+v %v", p, err)
	}
	p = queue.ListParams{}
	if err := FilterState(&p, "dead", now); err != nil || len(p.States) != 1 || p.States[0] != queue.StateDead || !p.DueAfter.IsZero() {
		t.Errorf("dead: %+v %v", p, err)
	}
	err := FilterState(&p, "bogus", now)
	if !errors.Is(err, queue.ErrInvalid) || !strings.Contains(err.Error(), `"bogus"`) || !strings.Contains(err.Error(), "pending, scheduled, processing") {
		t.Errorf("bogus: %v", err)
	}
}
