package cronspec

import (
	"testing"
	"time"
)

// FuzzSchedule checks that Parse never panics (robfig/cron panics on some
// inputs) and that Next on an accepted spec is strictly increasing, in a zone
// with DST, around a transition.
func FuzzSchedule(f *testing.F) {
	for _, s := range []string{
		"0 2 * * *", "30 0 2 * * *", "@daily", "@every 90s", "@every 1d", "*/7 1-3 * * *",
		"TZ=", "CRON_TZ=x", "TZ=UTC 0 * * * *", "0 TZ= * * *", "0 0 30 2 *", "@every", "", "1-2-3 * * * *", "*/0 * * * *",
	} {
		f.Add(s)
	}
	ny, err := time.LoadLocation("America/New_York")
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, spec string) {
		s, err := Parse(spec, ny)
		if err != nil {
			return
		}
		at := time.Date(2026, 11, 1, 4, 0, 0, 0, time.UTC)
		for range 5 {
			next := s.Next(at)
			if !next.After(at) {
				t.Fatalf("%q: Next(%s) = %s, not after", spec, at, next)
			}
			at = next
		}
	})
}
