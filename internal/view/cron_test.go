package view

import (
	"testing"
	"time"

	"github.com/queuectl/queuectl/queue"
)

// An "@every" template's next fires are on its grid, counted from its
// cursor: they do not move with the clock. A cron spec's follow the clock.
func TestNextFiresOfEveryCountFromTheCursor(t *testing.T) {
	cursor := time.Date(2026, 11, 29, 14, 53, 16, 0, time.UTC)
	every := &queue.Template{Name: "hourly", Schedule: "@every 1h", TimeZone: "UTC", Enabled: true, Cursor: cursor}
	for _, later := range []time.Duration{time.Minute, 20 * time.Minute, 2*time.Hour + 5*time.Minute} {
		c := NewCronTemplate(every, cursor.Add(later), 2)
		k := later / time.Hour
		want := []time.Time{cursor.Add((k + 1) * time.Hour), cursor.Add((k + 2) * time.Hour)}
		if len(c.NextFires) != 2 || !c.NextFires[0].Equal(want[0]) || !c.NextFires[1].Equal(want[1]) {
			t.Errorf("at cursor + %s: next fires %v, want %v", later, c.NextFires, want)
		}
	}
	spec := &queue.Template{Name: "top", Schedule: "0 * * * *", TimeZone: "UTC", Enabled: true, Cursor: cursor}
	if c := NewCronTemplate(spec, cursor.Add(20*time.Minute), 1); len(c.NextFires) != 1 || !c.NextFires[0].Equal(time.Date(2026, 11, 29, 16, 0, 0, 0, time.UTC)) {
		t.Errorf("a cron spec's next fire: %v, want 16:00", c.NextFires)
	}
}

// Missed slots are counted exactly up to MaxMissedCount, and past it the
// view says there are more: a per-second schedule after a month down has
// millions, which every scrape of /metrics would walk again.
func TestMissedSlotsCountedUpToTheBound(t *testing.T) {
	cursor := time.Date(2026, 10, 1, 0, 0, 0, 0, time.UTC)
	minutely := &queue.Template{Name: "m", Schedule: "* * * * *", TimeZone: "UTC", Enabled: true, Cursor: cursor}
	if c := NewCronTemplate(minutely, cursor.Add(2*time.Hour+missedGrace), 0); c.MissedSlots != 120 || c.MissedSlotsMore {
		t.Errorf("a minutely schedule two hours down: %d missed (more %v), want 120", c.MissedSlots, c.MissedSlotsMore)
	}
	secondly := &queue.Template{Name: "s", Schedule: "* * * * * *", TimeZone: "UTC", Enabled: true, Cursor: cursor}
	if c := NewCronTemplate(secondly, cursor.Add(30*24*time.Hour), 0); c.MissedSlots != MaxMissedCount || !c.MissedSlotsMore {
		t.Errorf("a per-second schedule a month down: %d missed (more %v), want %d and more", c.MissedSlots, c.MissedSlotsMore, MaxMissedCount)
	}
	exact := &queue.Template{Name: "e", Schedule: "* * * * * *", TimeZone: "UTC", Enabled: true, Cursor: cursor}
	if c := NewCronTemplate(exact, cursor.Add(MaxMissedCount*time.Second+missedGrace), 0); c.MissedSlots != MaxMissedCount || c.MissedSlotsMore {
		t.Errorf("exactly the bound: %d missed (more %v), want %d and no more", c.MissedSlots, c.MissedSlotsMore, MaxMissedCount)
	}
}
