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
