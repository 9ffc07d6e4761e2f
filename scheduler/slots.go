package scheduler

import (
	"fmt"
	"slices"
	"time"

	"github.com/queuectl/queuectl/queue"
	"github.com/queuectl/queuectl/scheduler/cronspec"
)

// A template's slots: its schedule parsed in its time zone, the slots due
// in an interval (Due walks them, for catch_up = "all"; Latest finds the
// last one without walking, for the other policies), and the next slot
// after now.

// maxScan bounds how many slots one template's catch-up walks through.
const maxScan = 1_000_000

// Parse parses a template's schedule in its time zone.
func Parse(t *queue.Template) (*cronspec.Schedule, error) {
	zone := t.TimeZone
	if zone == "" {
		zone = "UTC"
	}
	loc, err := time.LoadLocation(zone)
	if err != nil {
		return nil, fmt.Errorf("template %s: time zone %q: %w", t.Name, zone, err)
	}
	sc, err := cronspec.Parse(t.Schedule, loc)
	if err != nil {
		return nil, fmt.Errorf("template %s: %w", t.Name, err)
	}
	return sc, nil
}

// Nexter is the part of a schedule that Due and Latest use:
// (*cronspec.Schedule).Next.
type Nexter interface {
	Next(t time.Time) time.Time
}

// Due returns the slots in (after, now] (at most keep of the latest), how
// many there were in all, and whether the scan was cut short. It walks
// every slot, so it serves catch_up = "all"; Latest serves the others.
func Due(sched Nexter, after, now time.Time, keep int) (slots []time.Time, total int, truncated bool) {
	keep = max(keep, 1)
	for slot := sched.Next(after); !slot.IsZero() && !slot.After(now); slot = sched.Next(slot) {
		total++
		slots = append(slots, slot)
		if len(slots) > keep {
			slots = slots[1:]
		}
		if total >= maxScan {
			return slots, total, true
		}
	}
	return slots, total, false
}

// CountDue counts the slots in (after, now], up to limit: more reports
// that there are more than limit. It walks them, so limit bounds its
// work: a per-second schedule after a month down has millions.
func CountDue(sched Nexter, after, now time.Time, limit int) (n int, more bool) {
	for slot := sched.Next(after); !slot.IsZero() && !slot.After(now); slot = sched.Next(slot) {
		if n == limit {
			return n, true
		}
		n++
	}
	return n, false
}

// Latest returns the last slot in (after, now] and how many slots that
// interval holds: 0, 1, or 2 meaning "two or more". It calls Next a number
// of times that grows with the logarithm of the outage, not with the
// number of slots: a per-second schedule after years down costs about a
// hundred calls. Next is monotonic (a later t never gives an earlier
// slot), so the last slot is found by searching back from now: first in
// doubling steps, then by bisection, keeping Next(lo) <= now < Next(hi).
//
// An "@every D" schedule (one with an Every method giving D > 0) has its
// slots on the grid after + k·D, counted from the cursor: Next of any time
// is that time plus D, so the search would find a slot at about now, off
// the grid. Its latest slot is computed instead.
func Latest(sched Nexter, after, now time.Time) (last time.Time, n int) {
	if e, ok := sched.(interface{ Every() time.Duration }); ok && e.Every() > 0 {
		d := e.Every()
		k := now.Sub(after) / d
		if k <= 0 {
			return time.Time{}, 0
		}
		return after.Add(k * d).UTC(), int(min(k, 2))
	}
	due := func(t time.Time) bool {
		s := sched.Next(t)
		return !s.IsZero() && !s.After(now)
	}
	first := sched.Next(after)
	if first.IsZero() || first.After(now) {
		return time.Time{}, 0
	}
	if !due(first) {
		return first, 1
	}
	lo, hi := first, now
	for step := time.Second; ; step *= 2 {
		c := now.Add(-step)
		if !c.After(lo) {
			break
		}
		if due(c) {
			lo = c
			break
		}
		hi = c
	}
	for hi.Sub(lo) > 1 {
		mid := lo.Add(hi.Sub(lo) / 2)
		if due(mid) {
			lo = mid
		} else {
			hi = mid
		}
	}
	return sched.Next(lo), 2
}

// lastSlots returns the latest keep slots in (after, now], oldest first,
// found by stepping back from now with Latest: for an outage with more
// slots than Due walks. Like Due, it keeps at most maxScan of them.
func lastSlots(sched Nexter, after, now time.Time, keep int) []time.Time {
	var slots []time.Time
	for len(slots) < min(keep, maxScan) {
		last, n := Latest(sched, after, now)
		if n == 0 {
			break
		}
		slots = append(slots, last)
		now = last.Add(-time.Nanosecond)
	}
	slices.Reverse(slots)
	return slots
}

// NextAfter is the first fire time of schedule sc after now, for a
// template whose cursor is cursor: an "@every" schedule's slots are on the
// grid counted from the cursor, not from now. It is zero when the
// schedule never fires again.
func NextAfter(sc *cronspec.Schedule, cursor, now time.Time) time.Time {
	from := now
	if sc.Every() > 0 && !cursor.IsZero() {
		from = cursor
		if last, n := Latest(sc, cursor, now); n > 0 {
			from = last
		}
	}
	return sc.Next(from)
}
