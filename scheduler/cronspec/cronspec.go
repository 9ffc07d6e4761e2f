// Package cronspec parses cron schedules and computes their fire times in a
// time zone.
//
// # Syntax
//
// A spec is one of
//
//   - 5 fields, minute precision: "minute hour day-of-month month day-of-week",
//     e.g. "0 2 * * *";
//   - 6 fields with a leading seconds field, e.g. "30 0 2 * * *";
//   - a descriptor: @yearly (= @annually), @monthly, @weekly, @daily
//     (= @midnight), @hourly;
//   - "@every DURATION", a fixed interval such as "@every 90s" or "@every 1d".
//
// Fields accept numbers, ranges (1-5), steps (*/15, 10-40/10), lists (1,15),
// "*" and "?" (same as "*"), month names JAN-DEC and day names SUN-SAT
// (day-of-week is 0-6, Sunday = 0). When both day-of-month and day-of-week
// are restricted, a day matches if either matches (traditional cron). The
// parsing is done by github.com/robfig/cron/v3; its "CRON_TZ=" and "TZ="
// prefixes are rejected because the zone is a separate setting, and a spec
// that can never fire (e.g. "0 0 30 2 *") is rejected too.
//
// # Time zones and daylight saving time
//
// A cron spec describes wall-clock times in the schedule's location. Where the
// wall clock jumps (daylight saving time, or any other change of UTC offset),
// [Schedule.Next] applies these rules:
//
// Fixed-hour specs (the hour field does not cover all 24 hours, e.g.
// "30 2 * * *", "@daily"):
//
//   - A slot inside a spring-forward gap (02:30 on a day where the clock jumps
//     from 02:00 to 03:00) fires once, at the instant of the transition
//     (03:00 local time after the jump). Several slots in the same gap, and a
//     slot at exactly the first wall-clock time after the gap, all collapse
//     into that single fire.
//   - A slot inside a fall-back overlap (01:30 on a day where the clock goes
//     from 02:00 back to 01:00) fires once, at its first occurrence (the one
//     with the earlier instant, i.e. still on summer time). Next called with
//     a time inside the repeated interval never returns the second
//     occurrence.
//
// Hourly-or-finer specs (the hour field covers all 24 hours, e.g.
// "0 * * * *", "*/5 * * * *", "@hourly"): the schedule follows the clock.
// It fires whenever the local clock shows a matching time: wall-clock times
// skipped by a spring-forward gap do not fire, and wall-clock times shown
// twice by a fall-back fire twice (at two different instants). For the usual
// one-hour transitions this gives exactly the cadence of the same spec in
// UTC: "0 * * * *" fires once per absolute hour across both transitions, with
// no duplicate and no missing hour.
//
// "@every D" ignores the location: Next(t) is exactly t+D, anchored to the
// time passed in (the caller passes its cursor), with no rounding.
package cronspec

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/queuectl/queuectl/internal/duration"
	"github.com/robfig/cron/v3"
)

// ErrNeverFires is wrapped by the error Parse returns for a well-formed spec
// that matches no date, such as "0 0 30 2 *".
var ErrNeverFires = errors.New("schedule never fires")

// Schedule is a parsed cron spec bound to a location. It is immutable and safe
// for concurrent use.
type Schedule struct {
	spec  string
	loc   *time.Location
	every time.Duration

	// wall is the robfig schedule evaluated in UTC: Next below feeds it
	// wall-clock readings disguised as UTC times, so robfig never sees a
	// DST transition.
	wall *cron.SpecSchedule
	// followClock is set for hourly-or-finer specs; see the package doc.
	followClock bool
}

// fieldNames are the 6 cron fields in robfig order.
var fieldNames = [...]string{"seconds", "minute", "hour", "day-of-month", "month", "day-of-week"}

// fieldOptions parse a single field of the matching kind, used to point at
// the faulty field in an error message.
var fieldOptions = [...]cron.ParseOption{cron.Second, cron.Minute, cron.Hour, cron.Dom, cron.Month, cron.Dow}

var sixFields = cron.NewParser(cron.Second | cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow | cron.Descriptor)

// allHours is the bit set of hours 0-23 in a robfig SpecSchedule.
const allHours = 1<<24 - 1

// Parse parses spec (see the package doc for the syntax) for the location
// loc; a nil loc means UTC.
//
// It rejects an empty spec, a "CRON_TZ=" or "TZ=" prefix (the zone is given
// by loc), a wrong number of fields, invalid field values, an "@every"
// interval shorter than a second, and a spec that never fires (wrapping
// ErrNeverFires).
func Parse(spec string, loc *time.Location) (*Schedule, error) {
	if loc == nil {
		loc = time.UTC
	}
	s := strings.TrimSpace(spec)
	if s == "" {
		return nil, errors.New("empty schedule")
	}
	upper := strings.ToUpper(s)
	for _, prefix := range []string{"CRON_TZ=", "TZ="} {
		if strings.HasPrefix(upper, prefix) {
			return nil, fmt.Errorf("a %q prefix is not supported in a schedule: set the time zone separately", prefix)
		}
	}

	if strings.HasPrefix(s, "@") {
		return parseDescriptor(spec, s, loc)
	}

	fields := strings.Fields(s)
	if len(fields) != 5 && len(fields) != 6 {
		return nil, fmt.Errorf("expected 5 fields (minute hour day-of-month month day-of-week) or 6 with leading seconds, found %d", len(fields))
	}
	if len(fields) == 5 {
		fields = append([]string{"0"}, fields...)
	}
	for i, f := range fields {
		if _, err := robfigParse(cron.NewParser(fieldOptions[i]), f); err != nil {
			return nil, fmt.Errorf("invalid %s field %q: %v", fieldNames[i], f, err)
		}
	}
	sched, err := robfigParse(sixFields, strings.Join(fields, " "))
	if err != nil {
		return nil, err
	}
	return newSpecSchedule(spec, loc, sched)
}

func parseDescriptor(spec, s string, loc *time.Location) (*Schedule, error) {
	name, arg, _ := strings.Cut(s, " ")
	name = strings.ToLower(name)
	arg = strings.TrimSpace(arg)
	if name == "@every" {
		if arg == "" {
			return nil, errors.New(`"@every" needs a duration, e.g. "@every 90s"`)
		}
		d, err := ParseDuration(arg)
		if err != nil {
			return nil, err
		}
		if d < time.Second {
			return nil, fmt.Errorf("@every interval %s is too short: the minimum is 1s", arg)
		}
		return &Schedule{spec: spec, loc: loc, every: d}, nil
	}
	switch name {
	case "@yearly", "@annually", "@monthly", "@weekly", "@daily", "@midnight", "@hourly":
	default:
		return nil, fmt.Errorf("unknown descriptor %q (want @yearly, @annually, @monthly, @weekly, @daily, @midnight, @hourly or @every DURATION)", name)
	}
	if arg != "" {
		return nil, fmt.Errorf("descriptor %s takes no argument, found %q", name, arg)
	}
	sched, err := robfigParse(sixFields, name)
	if err != nil {
		return nil, err
	}
	return newSpecSchedule(spec, loc, sched)
}

// robfigParse calls robfig's parser, converting a panic into an error:
// robfig/cron v3.0.1 panics on inputs such as a bare "TZ=". The prefix is
// rejected before, but the guard keeps any other such input from crashing
// the caller.
func robfigParse(p cron.Parser, spec string) (sched cron.Schedule, err error) {
	defer func() {
		if r := recover(); r != nil {
			sched, err = nil, fmt.Errorf("invalid schedule %q", spec)
		}
	}()
	return p.Parse(spec)
}

func newSpecSchedule(spec string, loc *time.Location, sched cron.Schedule) (*Schedule, error) {
	ss, ok := sched.(*cron.SpecSchedule)
	if !ok {
		return nil, fmt.Errorf("invalid schedule %q", spec)
	}
	wall := *ss
	wall.Location = time.UTC
	s := &Schedule{
		spec:        spec,
		loc:         loc,
		wall:        &wall,
		followClock: wall.Hour&allHours == allHours,
	}
	// Only the day-of-month and month fields can rule out every date (day
	// of week is OR-ed with day of month when both are restricted, and
	// otherwise one of them is "*"). Searching from 2000, a leap year, finds
	// a match for any day that exists, so finding none means never.
	if s.civilNext(time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)).IsZero() {
		return nil, fmt.Errorf("%w: no date matches %q", ErrNeverFires, strings.TrimSpace(spec))
	}
	return s, nil
}

// String returns the spec as given to Parse.
func (s *Schedule) String() string { return s.spec }

// Location returns the time zone the spec is evaluated in.
func (s *Schedule) Location() *time.Location { return s.loc }

// Every returns the interval of an "@every" schedule, or 0 for a cron spec.
func (s *Schedule) Every() time.Duration { return s.every }

// maxSegments bounds the number of UTC-offset changes Next walks through; real
// zones have at most a few per year and civilNext already skips to the next
// matching date.
const maxSegments = 1000

// Next returns the first fire time strictly after t, in UTC, following the
// DST rules in the package doc. It returns the zero time if there is none.
func (s *Schedule) Next(t time.Time) time.Time {
	if s.every > 0 {
		return t.Add(s.every).UTC()
	}
	lt := t.In(s.loc)
	_, off := lt.Zone()
	// lb is the earliest wall-clock slot that may still fire.
	lb := wallClock(lt).Add(time.Second)
	if !s.followClock {
		if hw := highWater(lt, s.loc); hw.After(lb) {
			lb = hw
		}
	}
	_, end := lt.ZoneBounds() // end of the current offset; zero = forever
	for range maxSegments {
		w := s.civilNext(lb)
		if w.IsZero() {
			return time.Time{}
		}
		at := instant(w, off)
		if end.IsZero() || at.Before(end) {
			return at
		}
		// The slot lies beyond the current offset's end: cross the
		// transition at end.
		next := end.In(s.loc)
		_, nextOff := next.Zone()
		first := wallClock(next) // first wall-clock reading after the transition
		switch {
		case nextOff > off: // spring forward: [end+off, first) is never shown
			if w.Before(first) {
				if !s.followClock {
					return end.UTC()
				}
				lb = first
			} else {
				lb = w
			}
		case nextOff < off: // fall back: [first, end+off) is shown again
			if s.followClock {
				lb = first
			} else {
				lb = w // slots before w fired on the first pass
			}
		default: // only the zone's name changed
			lb = w
		}
		off = nextOff
		_, end = next.ZoneBounds()
	}
	return time.Time{}
}

// civilNext returns the first wall-clock slot at or after lb (a wall-clock
// reading expressed as a UTC time), or the zero time if there is none.
func (s *Schedule) civilNext(lb time.Time) time.Time {
	from := lb.Add(-time.Second) // robfig's Next is strictly after, at 1s granularity
	// robfig gives up after about five years; Feb 29 can be eight years apart
	// (2096 to 2104), and some day-of-week/day-of-month combinations recur
	// even less often, so search a few windows before giving up.
	for range 6 {
		if n := s.wall.Next(from); !n.IsZero() {
			return n
		}
		from = from.AddDate(5, 0, 0)
	}
	return time.Time{}
}

// wallClock returns the wall-clock reading of t in its location, truncated to
// the second, expressed as a UTC time.
func wallClock(t time.Time) time.Time {
	_, off := t.Zone()
	return time.Unix(t.Unix()+int64(off), 0).UTC()
}

// instant converts a wall-clock reading (as a UTC time) at UTC offset off
// (seconds east) to the instant it denotes.
func instant(wall time.Time, off int) time.Time {
	return time.Unix(wall.Unix()-int64(off), 0).UTC()
}

// highWater returns the latest wall-clock reading (exclusive) shown before the
// current offset of lt began, if that is later than lt's own reading: it is
// non-zero when lt is in the second pass of a fall-back overlap. Fixed-hour
// slots below it already fired on the first pass.
func highWater(lt time.Time, loc *time.Location) time.Time {
	var hw time.Time
	start, _ := lt.ZoneBounds()
	// Two fall-backs within two days do not happen in practice; looking a few
	// offsets back keeps this right even then.
	for range 4 {
		if start.IsZero() || lt.Sub(start) > 48*time.Hour {
			break
		}
		before := start.Add(-time.Second).In(loc)
		_, prevOff := before.Zone()
		// The previous offset's clock ran up to start+prevOff (exclusive).
		if end := time.Unix(start.Unix()+int64(prevOff), 0).UTC(); end.After(hw) {
			hw = end
		}
		start, _ = before.ZoneBounds()
	}
	return hw
}

// ParseDuration parses a duration as written in a configuration file; see
// package duration for the syntax.
func ParseDuration(s string) (time.Duration, error) { return duration.Parse(s) }
