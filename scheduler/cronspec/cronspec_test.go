package cronspec

import (
	"errors"
	"strings"
	"testing"
	"time"
	_ "time/tzdata" // the DST tests must not depend on the host's zoneinfo
)

func mustLoad(t *testing.T, name string) *time.Location {
	t.Helper()
	loc, err := time.LoadLocation(name)
	if err != nil {
		t.Fatalf("LoadLocation(%q): %v", name, err)
	}
	return loc
}

func mustParse(t *testing.T, spec string, loc *time.Location) *Schedule {
	t.Helper()
	s, err := Parse(spec, loc)
	if err != nil {
		t.Fatalf("Parse(%q): %v", spec, err)
	}
	return s
}

func utc(t *testing.T, s string) time.Time {
	t.Helper()
	ts, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		t.Fatalf("bad test time %q: %v", s, err)
	}
	return ts.UTC()
}

// fires returns the first n fire times after from.
func fires(s *Schedule, from time.Time, n int) []time.Time {
	var out []time.Time
	for t := from; len(out) < n; {
		t = s.Next(t)
		if t.IsZero() {
			break
		}
		out = append(out, t)
	}
	return out
}

func assertFires(t *testing.T, s *Schedule, from string, want ...string) {
	t.Helper()
	got := fires(s, utc(t, from), len(want))
	if len(got) != len(want) {
		t.Fatalf("%q from %s: got %d fires %v, want %v", s, from, len(got), got, want)
	}
	for i := range want {
		if w := utc(t, want[i]); !got[i].Equal(w) || got[i].Location() != time.UTC {
			t.Errorf("%q from %s: fire %d = %s (%s), want %s",
				s, from, i, got[i].Format(time.RFC3339), got[i].In(s.Location()).Format("15:04:05 MST"), want[i])
		}
	}
}

func TestParseAndNextUTC(t *testing.T) {
	tests := []struct {
		name string
		spec string
		from string
		want []string
	}{
		{"five fields", "0 2 * * *", "2026-01-01T00:00:00Z", []string{"2026-01-01T02:00:00Z", "2026-01-02T02:00:00Z"}},
		{"five fields is strictly after", "0 2 * * *", "2026-01-01T02:00:00Z", []string{"2026-01-02T02:00:00Z"}},
		{"six fields with seconds", "30 0 2 * * *", "2026-01-01T02:00:00Z", []string{"2026-01-01T02:00:30Z", "2026-01-02T02:00:30Z"}},
		{"every second field", "*/20 * * * * *", "2026-01-01T00:00:05Z", []string{"2026-01-01T00:00:20Z", "2026-01-01T00:00:40Z", "2026-01-01T00:01:00Z"}},
		{"steps and lists", "*/15 9,17 * * *", "2026-01-01T09:40:00Z", []string{"2026-01-01T09:45:00Z", "2026-01-01T17:00:00Z"}},
		{"names", "0 12 * JAN MON-FRI", "2026-01-02T13:00:00Z", []string{"2026-01-05T12:00:00Z"}},
		{"question mark", "0 0 1 * ?", "2026-01-15T00:00:00Z", []string{"2026-02-01T00:00:00Z"}},
		{"dom or dow", "0 0 13 * 5", "2026-02-01T00:00:00Z", []string{"2026-02-06T00:00:00Z", "2026-02-13T00:00:00Z", "2026-02-20T00:00:00Z"}},
		{"leap day", "0 0 29 2 *", "2026-01-01T00:00:00Z", []string{"2028-02-29T00:00:00Z", "2032-02-29T00:00:00Z"}},
		{"leap day across 2100", "0 0 29 2 *", "2097-01-01T00:00:00Z", []string{"2104-02-29T00:00:00Z"}},
		{"surrounding spaces", "  0 2 * * *  ", "2026-01-01T00:00:00Z", []string{"2026-01-01T02:00:00Z"}},
		{"@yearly", "@yearly", "2026-03-01T00:00:00Z", []string{"2027-01-01T00:00:00Z"}},
		{"@annually", "@annually", "2026-03-01T00:00:00Z", []string{"2027-01-01T00:00:00Z"}},
		{"@monthly", "@monthly", "2026-03-01T00:00:00Z", []string{"2026-04-01T00:00:00Z"}},
		{"@weekly", "@weekly", "2026-03-01T00:00:00Z", []string{"2026-03-08T00:00:00Z"}}, // Sundays
		{"@daily", "@daily", "2026-03-01T10:00:00Z", []string{"2026-03-02T00:00:00Z"}},
		{"@midnight", "@midnight", "2026-03-01T10:00:00Z", []string{"2026-03-02T00:00:00Z"}},
		{"@hourly", "@hourly", "2026-03-01T10:00:00Z", []string{"2026-03-01T11:00:00Z", "2026-03-01T12:00:00Z"}},
		{"descriptor is case-insensitive", "@Daily", "2026-03-01T10:00:00Z", []string{"2026-03-02T00:00:00Z"}},
		{"sub-second input", "* * * * * *", "2026-03-01T10:00:00.999Z", []string{"2026-03-01T10:00:01Z"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			assertFires(t, mustParse(t, tc.spec, time.UTC), tc.from, tc.want...)
		})
	}
}

func TestNilLocationIsUTC(t *testing.T) {
	s := mustParse(t, "0 2 * * *", nil)
	if s.Location() != time.UTC {
		t.Fatalf("Location() = %v, want UTC", s.Location())
	}
	if s.String() != "0 2 * * *" {
		t.Errorf("String() = %q, want the spec as given", s.String())
	}
	assertFires(t, s, "2026-01-01T00:00:00Z", "2026-01-01T02:00:00Z")
}

func TestNextReturnsUTC(t *testing.T) {
	berlin := mustLoad(t, "Europe/Berlin")
	s := mustParse(t, "0 9 * * *", berlin)
	from := time.Date(2026, 6, 1, 12, 0, 0, 0, berlin)
	got := s.Next(from)
	if got.Location() != time.UTC {
		t.Errorf("Next returned location %v, want UTC", got.Location())
	}
	if want := utc(t, "2026-06-02T07:00:00Z"); !got.Equal(want) {
		t.Errorf("Next = %s, want %s", got, want)
	}
}

func TestEvery(t *testing.T) {
	tests := []struct {
		name string
		spec string
		from string
		want string
	}{
		{"anchored to the cursor", "@every 90s", "2026-01-01T10:00:07Z", "2026-01-01T10:01:37Z"},
		{"keeps sub-second cursor", "@every 90s", "2026-01-01T10:00:00.5Z", "2026-01-01T10:01:30.5Z"},
		{"days", "@every 1d", "2026-03-07T12:00:00Z", "2026-03-08T12:00:00Z"},
		{"fraction", "@every 1.5s", "2026-01-01T10:00:00Z", "2026-01-01T10:00:01.5Z"},
		{"extra spaces", "@every   2h  ", "2026-01-01T10:00:00Z", "2026-01-01T12:00:00Z"},
		{"plain seconds", "@every 45", "2026-01-01T10:00:00Z", "2026-01-01T10:00:45Z"},
	}
	ny := mustLoad(t, "America/New_York")
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := mustParse(t, tc.spec, ny) // the zone does not matter
			got := s.Next(utc(t, tc.from))
			if want := utc(t, tc.want); !got.Equal(want) || got.Location() != time.UTC {
				t.Errorf("Next = %s, want %s", got.Format(time.RFC3339Nano), tc.want)
			}
			if s.Every() == 0 {
				t.Errorf("Every() = 0 for %q", tc.spec)
			}
		})
	}
	if d := mustParse(t, "0 * * * *", nil).Every(); d != 0 {
		t.Errorf("Every() of a cron spec = %v, want 0", d)
	}
}

func TestParseRejects(t *testing.T) {
	tests := []struct {
		name    string
		spec    string
		wantErr string
	}{
		{"empty", "", "empty schedule"},
		{"blank", "   ", "empty schedule"},
		{"bare TZ", "TZ=", `"TZ=" prefix is not supported`},
		{"bare CRON_TZ", "CRON_TZ=x", `"CRON_TZ=" prefix is not supported`},
		{"TZ prefix", "TZ=UTC 0 2 * * *", `"TZ=" prefix is not supported`},
		{"CRON_TZ prefix", "CRON_TZ=Europe/Berlin 0 2 * * *", `"CRON_TZ=" prefix is not supported`},
		{"lower-case prefix", "cron_tz=UTC 0 2 * * *", `"CRON_TZ=" prefix is not supported`},
		{"TZ inside a field", "0 TZ=x * * *", `invalid hour field "TZ=x"`},
		{"too few fields", "0 2 * *", "found 4"},
		{"too many fields", "0 0 2 * * * 2026", "found 7"},
		{"minute out of range", "60 * * * *", `invalid minute field "60"`},
		{"hour out of range", "0 24 * * *", `invalid hour field "24"`},
		{"seconds out of range", "61 0 * * * *", `invalid seconds field "61"`},
		{"day of week 7", "0 0 * * 7", `invalid day-of-week field "7"`},
		{"bad month name", "0 0 1 FOO *", `invalid month field "FOO"`},
		{"zero step", "*/0 * * * *", `invalid minute field "*/0"`},
		{"reversed range", "0 0 20-10 * *", `invalid day-of-month field "20-10"`},
		{"unknown descriptor", "@fortnightly", `unknown descriptor "@fortnightly"`},
		{"descriptor with argument", "@daily 5", "takes no argument"},
		{"every without duration", "@every", "needs a duration"},
		{"every bad duration", "@every soon", `invalid duration "soon"`},
		{"every too short", "@every 500ms", "too short"},
		{"every zero", "@every 0", "too short"},
		{"every negative", "@every -1m", "too short"},
		{"never fires: Feb 30", "0 0 30 2 *", "never fires"},
		{"never fires: Apr 31", "0 0 31 4 *", "never fires"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s, err := Parse(tc.spec, time.UTC)
			if err == nil {
				t.Fatalf("Parse(%q) = %v, want error containing %q", tc.spec, s, tc.wantErr)
			}
			if !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("Parse(%q) error = %q, want it to contain %q", tc.spec, err, tc.wantErr)
			}
		})
	}
	if _, err := Parse("0 0 30 2 *", nil); !errors.Is(err, ErrNeverFires) {
		t.Errorf("never-firing spec: error %v does not wrap ErrNeverFires", err)
	}
}

func TestDST(t *testing.T) {
	tests := []struct {
		name string
		zone string
		spec string
		from string
		want []string
	}{
		// America/New_York 2026: spring forward on Mar 8 at 02:00 EST (07:00Z)
		// to 03:00 EDT; fall back on Nov 1 at 02:00 EDT (06:00Z) to 01:00 EST.
		{"NY gap slot fires once at the transition", "America/New_York", "30 2 * * *", "2026-03-07T12:00:00Z",
			[]string{"2026-03-08T07:00:00Z", "2026-03-09T06:30:00Z", "2026-03-10T06:30:00Z"}},
		{"NY several gap slots collapse into one fire", "America/New_York", "*/20 2 * * *", "2026-03-07T12:00:00Z",
			[]string{"2026-03-08T07:00:00Z", "2026-03-09T06:00:00Z", "2026-03-09T06:20:00Z"}},
		{"NY gap slot and 03:00 slot collapse", "America/New_York", "0 2,3 * * *", "2026-03-07T12:00:00Z",
			[]string{"2026-03-08T07:00:00Z", "2026-03-09T06:00:00Z", "2026-03-09T07:00:00Z"}},
		{"NY gap slot with seconds", "America/New_York", "15 30 2 * * *", "2026-03-08T06:59:59Z",
			[]string{"2026-03-08T07:00:00Z", "2026-03-09T06:30:15Z"}},
		{"NY slot after the gap is untouched", "America/New_York", "30 3 * * *", "2026-03-07T12:00:00Z",
			[]string{"2026-03-08T07:30:00Z", "2026-03-09T07:30:00Z"}},
		{"NY repeated slot fires once, on EDT", "America/New_York", "30 1 * * *", "2026-10-31T12:00:00Z",
			[]string{"2026-11-01T05:30:00Z", "2026-11-02T06:30:00Z"}},
		{"NY from between the two 01:30s", "America/New_York", "30 1 * * *", "2026-11-01T05:45:00Z",
			[]string{"2026-11-02T06:30:00Z"}},
		{"NY from the fall-back instant", "America/New_York", "30 1 * * *", "2026-11-01T06:00:00Z",
			[]string{"2026-11-02T06:30:00Z"}},
		{"NY from just before the second 01:30", "America/New_York", "30 1 * * *", "2026-11-01T06:29:59Z",
			[]string{"2026-11-02T06:30:00Z"}},
		{"NY second pass still reaches slots after the overlap", "America/New_York", "30 2 * * *", "2026-11-01T06:10:00Z",
			[]string{"2026-11-01T07:30:00Z"}},
		{"NY hourly across spring forward", "America/New_York", "0 * * * *", "2026-03-08T04:30:00Z",
			[]string{"2026-03-08T05:00:00Z", "2026-03-08T06:00:00Z", "2026-03-08T07:00:00Z", "2026-03-08T08:00:00Z"}},
		{"NY hourly at :30 skips the missing 02:30", "America/New_York", "30 * * * *", "2026-03-08T05:00:00Z",
			[]string{"2026-03-08T05:30:00Z", "2026-03-08T06:30:00Z", "2026-03-08T07:30:00Z"}},
		{"NY hourly across fall back", "America/New_York", "0 * * * *", "2026-11-01T03:30:00Z",
			[]string{"2026-11-01T04:00:00Z", "2026-11-01T05:00:00Z", "2026-11-01T06:00:00Z", "2026-11-01T07:00:00Z"}},
		{"NY @hourly from inside the repeated hour", "America/New_York", "@hourly", "2026-11-01T05:30:00Z",
			[]string{"2026-11-01T06:00:00Z", "2026-11-01T07:00:00Z"}},
		{"NY every 30 minutes across fall back", "America/New_York", "*/30 * * * *", "2026-11-01T04:50:00Z",
			[]string{"2026-11-01T05:00:00Z", "2026-11-01T05:30:00Z", "2026-11-01T06:00:00Z", "2026-11-01T06:30:00Z", "2026-11-01T07:00:00Z"}},

		// Europe/Berlin 2026: spring forward on Mar 29 at 02:00 CET (01:00Z)
		// to 03:00 CEST; fall back on Oct 25 at 03:00 CEST (01:00Z) to 02:00 CET.
		{"Berlin gap slot fires once at the transition", "Europe/Berlin", "30 2 * * *", "2026-03-28T12:00:00Z",
			[]string{"2026-03-29T01:00:00Z", "2026-03-30T00:30:00Z"}},
		{"Berlin repeated slot fires once, on CEST", "Europe/Berlin", "30 2 * * *", "2026-10-24T12:00:00Z",
			[]string{"2026-10-25T00:30:00Z", "2026-10-26T01:30:00Z"}},
		{"Berlin from between the two 02:30s", "Europe/Berlin", "30 2 * * *", "2026-10-25T00:45:00Z",
			[]string{"2026-10-26T01:30:00Z"}},
		{"Berlin hourly across spring forward", "Europe/Berlin", "0 * * * *", "2026-03-28T23:30:00Z",
			[]string{"2026-03-29T00:00:00Z", "2026-03-29T01:00:00Z", "2026-03-29T02:00:00Z"}},
		{"Berlin hourly across fall back", "Europe/Berlin", "0 * * * *", "2026-10-24T23:30:00Z",
			[]string{"2026-10-25T00:00:00Z", "2026-10-25T01:00:00Z", "2026-10-25T02:00:00Z"}},
		{"Berlin daily at midnight unaffected", "Europe/Berlin", "@daily", "2026-10-24T12:00:00Z",
			[]string{"2026-10-24T22:00:00Z", "2026-10-25T23:00:00Z"}},

		// America/Sao_Paulo 2018: the clock jumped from 00:00 to 01:00 on
		// Nov 4, so that day's midnight did not exist.
		{"Sao Paulo missing midnight fires at 01:00", "America/Sao_Paulo", "@daily", "2018-11-03T12:00:00Z",
			[]string{"2018-11-04T03:00:00Z", "2018-11-05T02:00:00Z"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			assertFires(t, mustParse(t, tc.spec, mustLoad(t, tc.zone)), tc.from, tc.want...)
		})
	}
}

// TestHourlyCadenceOverAYear checks that hourly specs fire exactly once per
// absolute hour all year, both DST transitions included.
func TestHourlyCadenceOverAYear(t *testing.T) {
	for _, zone := range []string{"America/New_York", "Europe/Berlin"} {
		for _, spec := range []string{"0 * * * *", "17 * * * *", "@hourly"} {
			t.Run(zone+" "+spec, func(t *testing.T) {
				s := mustParse(t, spec, mustLoad(t, zone))
				prev := s.Next(utc(t, "2026-01-01T00:00:00Z"))
				for range 365 * 24 {
					next := s.Next(prev)
					if d := next.Sub(prev); d != time.Hour {
						t.Fatalf("fire after %s is %s, %v later; want exactly 1h", prev, next, d)
					}
					prev = next
				}
			})
		}
	}
}

// TestFixedTimeOncePerDay checks that a daily spec fires exactly once on each
// local date of a year, whether its slot is skipped or repeated by DST.
func TestFixedTimeOncePerDay(t *testing.T) {
	for _, zone := range []string{"America/New_York", "Europe/Berlin"} {
		for _, spec := range []string{"30 1 * * *", "30 2 * * *", "0 3 * * *", "0 0 * * *"} {
			t.Run(zone+" "+spec, func(t *testing.T) {
				loc := mustLoad(t, zone)
				s := mustParse(t, spec, loc)
				start := time.Date(2026, 1, 1, 0, 0, 0, 0, loc).Add(-time.Second)
				end := time.Date(2027, 1, 1, 0, 0, 0, 0, loc)
				seen := map[string]int{}
				for at := s.Next(start); at.Before(end); at = s.Next(at) {
					seen[at.In(loc).Format("2006-01-02")]++
				}
				if len(seen) != 365 {
					t.Errorf("fired on %d distinct dates, want 365", len(seen))
				}
				for day, n := range seen {
					if n != 1 {
						t.Errorf("fired %d times on %s", n, day)
					}
				}
			})
		}
	}
}

// TestNextConsistent checks that Next describes one fixed set of fire times:
// for any t, Next(t) is the first element of the sequence obtained by
// iterating Next that is after t. The scheduler relies on this when it
// restarts from a cursor anywhere, e.g. inside a repeated hour.
func TestNextConsistent(t *testing.T) {
	specs := []string{"30 2 * * *", "30 1 * * *", "*/20 2 * * *", "0 2,3 * * *", "0 * * * *", "30 * * * *", "*/7 * * * *", "15 30 1 * * *", "@daily"}
	windows := []struct{ zone, from string }{
		{"America/New_York", "2026-03-07T20:00:00Z"},
		{"America/New_York", "2026-10-31T20:00:00Z"},
		{"Europe/Berlin", "2026-03-28T20:00:00Z"},
		{"Europe/Berlin", "2026-10-24T20:00:00Z"},
	}
	for _, w := range windows {
		for _, spec := range specs {
			t.Run(w.zone+" "+w.from[:10]+" "+spec, func(t *testing.T) {
				s := mustParse(t, spec, mustLoad(t, w.zone))
				from := utc(t, w.from)
				until := from.Add(30 * time.Hour)
				var seq []time.Time
				for at := s.Next(from); at.Before(until.Add(48 * time.Hour)); at = s.Next(at) {
					if len(seq) > 0 && !at.After(seq[len(seq)-1]) {
						t.Fatalf("sequence not increasing: %s after %s", at, seq[len(seq)-1])
					}
					seq = append(seq, at)
				}
				i := 0
				for cur := from; cur.Before(until); cur = cur.Add(time.Minute + 7*time.Second) {
					for i < len(seq) && !seq[i].After(cur) {
						i++
					}
					if got := s.Next(cur); !got.Equal(seq[i]) {
						t.Fatalf("Next(%s) = %s, want %s", cur, got, seq[i])
					}
				}
			})
		}
	}
}

func TestParseDuration(t *testing.T) {
	tests := []struct {
		in   string
		want time.Duration
	}{
		{"0", 0},
		{"90s", 90 * time.Second},
		{"10m", 10 * time.Minute},
		{"1h30m", 90 * time.Minute},
		{"1.5h", 90 * time.Minute},
		{"1d", 24 * time.Hour},
		{"2d", 48 * time.Hour},
		{"1d12h", 36 * time.Hour},
		{"1d12h30m15s", 36*time.Hour + 30*time.Minute + 15*time.Second},
		{"1.5d", 36 * time.Hour},
		{"0d", 0},
		{"-1d", -24 * time.Hour},
		{"+2h", 2 * time.Hour},
		{"-1d2h", -26 * time.Hour},
		{"250ms", 250 * time.Millisecond},
		{"30", 30 * time.Second},
		{"1.5", 1500 * time.Millisecond},
		{" 1d ", 24 * time.Hour},
		{"-5", -5 * time.Second},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			got, err := ParseDuration(tc.in)
			if err != nil || got != tc.want {
				t.Errorf("ParseDuration(%q) = %v, %v; want %v", tc.in, got, err, tc.want)
			}
		})
	}
	for _, in := range []string{"", " ", "d", ".", "1.2.3", "1x", "h", "1e3", "inf", "NaN", "0x10", "1d-2h", "1d+2h", "--1h", "1h1d", "1dd", "d1h", "1 d", "1e3d", "999999999d", "1d9999999999h", ".d", "99999999999999999999"} {
		t.Run("invalid "+in, func(t *testing.T) {
			if got, err := ParseDuration(in); err == nil {
				t.Errorf("ParseDuration(%q) = %v, want an error", in, got)
			} else if !strings.Contains(err.Error(), "invalid duration") && !strings.Contains(err.Error(), "is too long") {
				t.Errorf("ParseDuration(%q) error %q lacks context", in, err)
			}
		})
	}
}
