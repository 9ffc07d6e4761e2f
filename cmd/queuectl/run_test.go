package main

import (
	"testing"
	"time"

	"github.com/queuectl/queuectl/queue"
)

// sameRate compares rate limits as they are stored: any two "none" are
// the same, and periods to the microsecond.
func TestSameRate(t *testing.T) {
	r := func(n int, per time.Duration) queue.RateLimit { return queue.RateLimit{N: n, Per: per} }
	for _, tc := range []struct {
		a, b queue.RateLimit
		same bool
	}{
		{r(0, 0), r(0, time.Second), true},
		{r(5, time.Second), r(5, time.Second), true},
		{r(5, 1000500*time.Nanosecond), r(5, 1000*time.Microsecond), true},
		{r(5, time.Second), r(6, time.Second), false},
		{r(5, time.Second), r(5, time.Minute), false},
		{r(5, time.Second), r(0, 0), false},
	} {
		if got := sameRate(tc.a, tc.b); got != tc.same {
			t.Errorf("sameRate(%v, %v) = %v, want %v", tc.a, tc.b, got, tc.same)
		}
	}
}
