// Package duration parses the durations users write, in the CLI and in the
// configuration file alike: Go durations, an optional leading day count, or
// a plain number of seconds. It is the one definition of that syntax.
package duration

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// Parse parses a duration: a Go duration string (see
// time.ParseDuration: "90s", "10m", "1h30m", "1.5h") that may start with a
// number of days with the "d" unit ("1d", "1d12h", "1.5d"; a day is always 24
// hours), or a plain number of seconds ("30", "1.5"). Surrounding white space
// is ignored; a leading "-" or "+" applies to the whole value.
func Parse(s string) (time.Duration, error) {
	bad := func() (time.Duration, error) {
		return 0, fmt.Errorf(`invalid duration %q: use a number with a unit, e.g. "90s", "10m", "1h30m", "1d" or "1d12h", or a number of seconds`, s)
	}
	tooLong := func() (time.Duration, error) {
		return 0, fmt.Errorf("duration %q is too long: at most about 106751d", s)
	}
	body, neg := strings.TrimSpace(s), false
	if body != "" && (body[0] == '-' || body[0] == '+') {
		neg, body = body[0] == '-', body[1:]
	}
	var d time.Duration
	daysPart, rest, hasDays := strings.Cut(body, "d")
	switch {
	case isDecimal(body): // seconds
		secs, err := strconv.ParseFloat(body, 64)
		if err != nil {
			return bad()
		}
		if secs*float64(time.Second) >= math.MaxInt64 {
			return tooLong()
		}
		d = time.Duration(math.Round(secs * float64(time.Second)))
	case !hasDays:
		if body == "" || body[0] == '-' || body[0] == '+' {
			return bad()
		}
		v, err := time.ParseDuration(body)
		if err != nil {
			return bad()
		}
		d = v
	default:
		if !isDecimal(daysPart) {
			return bad() // the day count must be a plain number such as 1 or 1.5
		}
		// Parsing "N" as hours reuses Go's number handling, fractions included.
		hours, err := time.ParseDuration(daysPart + "h")
		if err != nil && isDecimal(daysPart) || hours > math.MaxInt64/24 {
			return tooLong() // a plain number of days Go's hours cannot hold
		}
		if err != nil {
			return bad()
		}
		d = hours * 24
		if rest != "" {
			if rest[0] == '-' || rest[0] == '+' {
				return bad()
			}
			r, err := time.ParseDuration(rest)
			if err != nil {
				return bad()
			}
			if r > math.MaxInt64-d {
				return tooLong()
			}
			d += r
		}
	}
	if neg {
		d = -d
	}
	return d, nil
}

// isDecimal reports whether s is a plain non-negative decimal number: digits
// with at most one ".".
func isDecimal(s string) bool {
	return strings.Trim(s, "0123456789.") == "" && strings.Count(s, ".") <= 1 && strings.Trim(s, ".") != ""
}

// maxRateCount bounds a rate's COUNT.
const maxRateCount = 1_000_000

// ParseRate parses a rate limit: COUNT/PERIOD, the period "s", "m", "h" or
// a duration ("10/s", "100/m", "1000/h", "5/30s"), with a count from 1 to
// 1000000 and a period from 1ms to 24h. "0" and "" are no limit (0, 0).
func ParseRate(s string) (count int, per time.Duration, err error) {
	s = strings.TrimSpace(s)
	if s == "" || s == "0" {
		return 0, 0, nil
	}
	bad := fmt.Errorf(`invalid rate limit %q: use COUNT/PERIOD, e.g. "10/s", "100/m", "1000/h" or "5/30s" ("0" for none)`, s)
	num, unit, ok := strings.Cut(s, "/")
	count, err = strconv.Atoi(strings.TrimSpace(num))
	if !ok || err != nil {
		return 0, 0, bad
	}
	switch unit = strings.TrimSpace(unit); unit {
	case "s":
		per = time.Second
	case "m":
		per = time.Minute
	case "h":
		per = time.Hour
	default:
		if per, err = Parse(unit); err != nil {
			return 0, 0, bad
		}
	}
	// Written as a rate, but out of range: say which part.
	switch {
	case count < 1 || count > maxRateCount:
		return 0, 0, fmt.Errorf(`invalid rate limit %q: COUNT must be from 1 to %d ("0" for none)`, s, maxRateCount)
	case per < time.Millisecond || per > 24*time.Hour:
		return 0, 0, fmt.Errorf(`invalid rate limit %q: PERIOD must be from 1ms to 24h`, s)
	}
	return count, per, nil
}
