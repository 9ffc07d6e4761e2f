package view

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/queuectl/queuectl/queue"
	"github.com/queuectl/queuectl/scheduler"
)

// CronTemplate is a recurring job as `queuectl cron list --json` and
// GET /api/v1/cron show it: the template with its schedule in words, its
// next fire times and the slots it missed.
type CronTemplate struct {
	queue.TemplateJSON
	Description string      `json:"description"`
	NextFires   []time.Time `json:"next_fires"`
	// MissedSlots counts the slots due over a minute ago that no scheduler
	// has handled yet (no `queuectl run` was running for them), up to
	// MaxMissedCount; MissedSlotsMore says there are more.
	MissedSlots     int  `json:"missed_slots"`
	MissedSlotsMore bool `json:"missed_slots_more,omitempty"`
	// LastFire is the slot (or trigger time) of the newest job the template fired.
	LastFire *time.Time `json:"last_fire"`
}

// MaxMissedCount bounds the missed slots a template's view counts: each
// is a step of the schedule, and the CLI, the API, the dashboard and every
// scrape of /metrics count them again.
const MaxMissedCount = 10_000

// missedGrace is how late a slot may be before it counts as missed: a
// running scheduler handles a slot within a few seconds.
const missedGrace = time.Minute

// NewCronTemplate describes t as of now with up to next fire times.
func NewCronTemplate(t *queue.Template, now time.Time, next int) CronTemplate {
	c := CronTemplate{TemplateJSON: t.JSON(), Description: DescribeSchedule(t.Schedule), NextFires: []time.Time{}}
	if t.LastJob != nil {
		at := t.LastJob.ScheduledAt
		if at.IsZero() {
			at = t.LastJob.CreatedAt
		}
		at = at.UTC()
		c.LastFire = &at
	}
	sc, err := scheduler.Parse(t)
	if err != nil || !t.Enabled {
		return c
	}
	for at := scheduler.NextAfter(sc, t.Cursor, now); len(c.NextFires) < next && !at.IsZero(); at = sc.Next(at) {
		c.NextFires = append(c.NextFires, at.UTC())
	}
	if !t.Cursor.IsZero() {
		c.MissedSlots, c.MissedSlotsMore = scheduler.CountDue(sc, t.Cursor, now.Add(-missedGrace), MaxMissedCount)
	}
	return c
}

// CronTemplates describes every template; never null.
func CronTemplates(ts []*queue.Template, now time.Time, next int) []CronTemplate {
	out := make([]CronTemplate, 0, len(ts))
	for _, t := range ts {
		out = append(out, NewCronTemplate(t, now, next))
	}
	return out
}

var dayNames = []string{"Sunday", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday"}

var monthNames = []string{"", "January", "February", "March", "April", "May", "June", "July", "August",
	"September", "October", "November", "December"}

// DescribeSchedule says a cron spec in words, for the common forms; for
// others it returns "" and the spec speaks for itself.
func DescribeSchedule(spec string) string {
	spec = strings.TrimSpace(spec)
	switch spec {
	case "@hourly":
		return "every hour, on the hour"
	case "@daily", "@midnight":
		return "every day at 00:00"
	case "@weekly":
		return "every Sunday at 00:00"
	case "@monthly":
		return "on the 1st of every month at 00:00"
	case "@yearly", "@annually":
		return "every 1 January at 00:00"
	}
	if d, ok := strings.CutPrefix(spec, "@every "); ok {
		return "every " + strings.TrimSpace(d)
	}
	f := strings.Fields(spec)
	if len(f) == 6 {
		if f[0] != "0" {
			return ""
		}
		f = f[1:]
	}
	if len(f) != 5 {
		return ""
	}
	when := describeTime(f[0], f[1])
	days := describeDays(f[2], f[3], f[4])
	if when == "" || days == "" {
		return ""
	}
	if rest, ok := strings.CutPrefix(days, "every day"); ok && !strings.HasPrefix(when, "at ") {
		return when + rest // "every 5 minutes in December"
	}
	return days + " " + when
}

func describeTime(min, hour string) string {
	m, mErr := strconv.Atoi(min)
	switch {
	case min == "*" && hour == "*":
		return "every minute"
	case strings.HasPrefix(min, "*/") && hour == "*":
		return "every " + min[2:] + " minutes"
	case mErr == nil && hour == "*":
		return fmt.Sprintf("every hour at minute %d", m)
	case mErr == nil && strings.HasPrefix(hour, "*/"):
		return fmt.Sprintf("every %s hours at minute %d", hour[2:], m)
	case mErr == nil:
		var times []string
		for _, h := range strings.Split(hour, ",") {
			n, err := strconv.Atoi(h)
			if err != nil || n < 0 || n > 23 {
				return ""
			}
			times = append(times, fmt.Sprintf("%02d:%02d", n, m))
		}
		return "at " + strings.Join(times, " and ")
	}
	return ""
}

func describeDays(dom, month, dow string) string {
	var parts []string
	switch {
	case dom == "*" || dom == "?":
	case isNumber(dom):
		parts = append(parts, "on day "+dom+" of the month")
	default:
		return ""
	}
	switch {
	case dow == "*" || dow == "?":
	case dow == "1-5" || strings.EqualFold(dow, "MON-FRI"):
		parts = append(parts, "on weekdays")
	case dow == "0,6" || dow == "6,0" || strings.EqualFold(dow, "SAT,SUN"):
		parts = append(parts, "on weekends")
	case isNumber(dow):
		n, _ := strconv.Atoi(dow)
		parts = append(parts, "every "+dayNames[n%7])
	default:
		return ""
	}
	if len(parts) == 2 {
		// Both restricted: a day matching either fires, as in cron.
		parts = []string{parts[0] + " and on " + strings.TrimPrefix(parts[1], "on ")}
	}
	switch {
	case month == "*" || month == "?":
	case isNumber(month):
		n, _ := strconv.Atoi(month)
		if n < 1 || n > 12 {
			return ""
		}
		parts = append(parts, "in "+monthNames[n])
	default:
		return ""
	}
	if len(parts) == 0 {
		return "every day"
	}
	if strings.HasPrefix(parts[0], "in ") { // only the month is restricted
		return "every day " + parts[0]
	}
	return strings.Join(parts, " ")
}

func isNumber(s string) bool {
	_, err := strconv.Atoi(s)
	return err == nil
}
