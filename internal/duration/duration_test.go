package duration

import (
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want time.Duration
	}{
		{"90s", 90 * time.Second},
		{"1h30m", 90 * time.Minute},
		{"1.5h", 90 * time.Minute},
		{"1d", 24 * time.Hour},
		{"1.5d", 36 * time.Hour},
		{"1d12h", 36 * time.Hour},
		{"30", 30 * time.Second},
		{"1.5", 1500 * time.Millisecond},
		{" 2m ", 2 * time.Minute},
		{"-1d2h", -26 * time.Hour},
		{"+5s", 5 * time.Second},
		{"0", 0},
		{"500us", 500 * time.Microsecond},
	} {
		got, err := Parse(tc.in)
		if err != nil || got != tc.want {
			t.Errorf("Parse(%q) = %v, %v; want %v", tc.in, got, err, tc.want)
		}
	}
}

func TestParseRefuses(t *testing.T) {
	for _, in := range []string{
		"", " ", "-", "+", "d", "1x", "1d-5s", "1d+5s", "--5s", "+-5s", "1.2.3", ".", "1dd",
		"d5h", "1e3", "NaN", "Inf", "9999999999999", "106752d", "106751d24h", "2562048h", "1d 2h",
	} {
		if d, err := Parse(in); err == nil {
			t.Errorf("Parse(%q) = %v, want an error", in, d)
		} else if !strings.Contains(err.Error(), strconv.Quote(in)) {
			t.Errorf("Parse(%q): the error %q does not name the input", in, err)
		}
	}
}

// A value that reads as a duration but is too long says so, not that it
// is no duration.
func TestParseTooLongSaysSo(t *testing.T) {
	for _, in := range []string{"9999999999999", "106752d", "200000d", "106751d24h", "99999999999999999999d"} {
		if _, err := Parse(in); err == nil || !strings.Contains(err.Error(), "is too long") {
			t.Errorf("Parse(%q): %v; want too long", in, err)
		}
	}
	if _, err := Parse("1x"); err == nil || strings.Contains(err.Error(), "too long") {
		t.Errorf(`Parse("1x"): %v; want invalid, not too long`, err)
	}
}

func TestParseRate(t *testing.T) {
	for _, tc := range []struct {
		in    string
		count int
		per   time.Duration
	}{
		{"10/s", 10, time.Second},
		{"100/m", 100, time.Minute},
		{"1000/h", 1000, time.Hour},
		{"5/30s", 5, 30 * time.Second},
		{" 5 / 1d ", 5, 24 * time.Hour},
		{"0", 0, 0},
		{"", 0, 0},
		{"1000000/1ms", 1_000_000, time.Millisecond},
	} {
		n, per, err := ParseRate(tc.in)
		if err != nil || n != tc.count || per != tc.per {
			t.Errorf("ParseRate(%q) = %d, %v, %v; want %d, %v", tc.in, n, per, err, tc.count, tc.per)
		}
	}
	for _, in := range []string{"10", "/s", "0/s", "-1/s", "1000001/s", "10/0s", "10/500us", "10/25h", "10/x", "10/s/s", "1e3/s"} {
		if _, _, err := ParseRate(in); err == nil || !strings.Contains(err.Error(), strconv.Quote(strings.TrimSpace(in))) {
			t.Errorf("ParseRate(%q): %v, want an error naming the input", in, err)
		}
	}
}

// A rate written as COUNT/PERIOD but out of range says which part is out
// of which range, rather than how to write a rate.
func TestParseRateOutOfRangeSaysTheRange(t *testing.T) {
	for in, want := range map[string]string{
		"0/s":        "COUNT must be from 1 to 1000000",
		"1000001/s":  "COUNT must be from 1 to 1000000",
		"10/500us":   "PERIOD must be from 1ms to 24h",
		"10/25h":     "PERIOD must be from 1ms to 24h",
		"10/0s":      "PERIOD must be from 1ms to 24h",
		"10/x":       "use COUNT/PERIOD",
		"ten/second": "use COUNT/PERIOD",
	} {
		if _, _, err := ParseRate(in); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ParseRate(%q): %v, want an error saying %q", in, err, want)
		}
	}
}

// FuzzParse: Parse never panics, names the input when it refuses it, and
// reads back what time.Duration's String writes for a value it accepted.
func FuzzParse(f *testing.F) {
	for _, s := range []string{"90s", "1d12h", "1.5", "-1d2h", "106751d", "1d-5s", "0.000000001", "9223372036.854775807"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		d, err := Parse(s)
		if err != nil {
			if !strings.Contains(err.Error(), strconv.Quote(s)) {
				t.Fatalf("Parse(%q): the error %q does not name the input", s, err)
			}
			return
		}
		back, err := Parse(d.String())
		if err != nil || back != d {
			t.Fatalf("Parse(%q) = %v, but Parse(%q) = %v, %v", s, d, d.String(), back, err)
		}
	})
}

// FuzzParseRate: ParseRate never panics, keeps its bounds, and reads back
// a limit written as COUNT/DURATION.
func FuzzParseRate(f *testing.F) {
	for _, s := range []string{"10/s", "5/30s", "1000000/24h", "0", "1/1ms", "3/1d"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		n, per, err := ParseRate(s)
		if err != nil {
			return
		}
		if n == 0 && per == 0 {
			return // no limit
		}
		if n < 1 || n > 1_000_000 || per < time.Millisecond || per > 24*time.Hour {
			t.Fatalf("ParseRate(%q) = %d, %v: out of bounds", s, n, per)
		}
		n2, per2, err := ParseRate(strconv.Itoa(n) + "/" + per.String())
		if err != nil || n2 != n || per2 != per {
			t.Fatalf("ParseRate(%q) = %d/%v, read back as %d/%v, %v", s, n, per, n2, per2, err)
		}
	})
}
