package queue_test

import (
	"math"
	"math/rand/v2"
	"sort"
	"testing"
	"time"

	"github.com/queuectl/queuectl/queue"
)

// The buckets are at most a 32nd of their lower bound wide, from a
// millisecond to years, and a run time falls in the first bucket whose
// bound is not below it.
func TestRunTimeBuckets(t *testing.T) {
	b := queue.RunTimeBounds()
	if b[0] != 1000 || b[len(b)-1] != math.MaxInt64 || b[len(b)-2] < int64(4*365*24*time.Hour/time.Microsecond) {
		t.Fatalf("bounds from %d to %d (%d before the last)", b[0], b[len(b)-1], b[len(b)-2])
	}
	for i := 1; i < len(b)-1; i++ {
		if w := b[i] - b[i-1]; w <= 0 || w > b[i-1]/queue.RunTimeBucketRatio {
			t.Fatalf("bucket %d: (%d, %d] is %d wide", i, b[i-1], b[i], w)
		}
	}
	for _, c := range []struct{ us, le int64 }{{-5, 1000}, {0, 1000}, {1000, 1000}, {1001, b[1]}, {b[1], b[1]}, {b[1] + 1, b[2]},
		{math.MaxInt64 - 1, math.MaxInt64}} {
		if got := queue.RunTimeBucket(c.us); got != c.le {
			t.Errorf("RunTimeBucket(%d) = %d, want %d", c.us, got, c.le)
		}
	}
}

// Percentiles read from a histogram are within half a bucket of the exact
// nearest-rank figures; min and max are exact.
func TestRunTimeHistogramQuantiles(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, n := range []int{1, 2, 3, 10, 1000, 20000} {
		var h queue.RunTimeHistogram
		exact := make([]int64, n)
		for i := range exact {
			us := int64(math.Exp(r.Float64() * math.Log(3.6e9))) // 1 µs to an hour
			exact[i] = us
			// One count per attempt, as a store sums them.
			h.Add(queue.RunTimeCount{LE: queue.RunTimeBucket(us), N: 1, Min: us, Max: us})
		}
		sort.Slice(exact, func(i, j int) bool { return exact[i] < exact[j] })
		if h.Count() != int64(n) || h.Min() != time.Duration(exact[0])*time.Microsecond ||
			h.Max() != time.Duration(exact[n-1])*time.Microsecond {
			t.Fatalf("n=%d: count %d, min %s, max %s", n, h.Count(), h.Min(), h.Max())
		}
		for _, p := range []float64{0, 0.01, 0.5, 0.9, 0.95, 0.99, 0.999, 1} {
			want := exact[max(0, int(math.Ceil(p*float64(n)))-1)]
			got := h.Quantile(p).Microseconds()
			if diff := math.Abs(float64(got - want)); diff > max(float64(want)/(2*queue.RunTimeBucketRatio), 500) {
				t.Errorf("n=%d p=%g: %d µs, want %d µs", n, p, got, want)
			}
		}
	}
	var empty queue.RunTimeHistogram
	if empty.Quantile(0.5) != 0 || empty.Min() != 0 || empty.Max() != 0 || empty.Count() != 0 {
		t.Errorf("an empty histogram reads nonzero figures")
	}
}

// A window starts at its first minute; it reads hours from the first
// whole hour in it, unless its steps cannot be made of hours.
func TestRunTimeParamsSlots(t *testing.T) {
	at := func(h, m, s int) time.Time { return time.Date(2026, 3, 1, h, m, s, 0, time.UTC) }
	for _, c := range []struct {
		p            queue.RunTimeParams
		start, hours time.Time
	}{
		{queue.RunTimeParams{Since: at(10, 20, 30)}, at(10, 20, 0), at(11, 0, 0)},
		{queue.RunTimeParams{Since: at(10, 0, 0)}, at(10, 0, 0), at(10, 0, 0)},
		{queue.RunTimeParams{Since: at(10, 0, 59)}, at(10, 0, 0), at(10, 0, 0)},
		{queue.RunTimeParams{Since: at(10, 0, 0), Step: time.Hour}, at(10, 0, 0), at(10, 0, 0)},
		{queue.RunTimeParams{Since: at(10, 0, 0), Step: 5 * time.Minute}, at(10, 0, 0), time.Time{}},
		{queue.RunTimeParams{Since: at(10, 30, 0), Step: time.Hour}, at(10, 30, 0), time.Time{}},
		{queue.RunTimeParams{Since: at(10, 0, 0).In(time.FixedZone("x", 1800))}, at(10, 0, 0), at(10, 0, 0)},
	} {
		if !c.p.Start().Equal(c.start) || !c.p.Hours().Equal(c.hours) {
			t.Errorf("%+v: start %v, hours %v; want %v, %v", c.p, c.p.Start(), c.p.Hours(), c.start, c.hours)
		}
	}
}

func TestOutcomeClass(t *testing.T) {
	for o, want := range map[queue.Outcome]queue.Outcome{queue.OutcomeSucceeded: queue.OutcomeSucceeded,
		queue.OutcomeInterrupted: queue.OutcomeInterrupted, queue.OutcomeFailed: queue.OutcomeFailed,
		queue.OutcomeTimedOut: queue.OutcomeFailed, queue.OutcomeLost: queue.OutcomeFailed, queue.OutcomeCancelled: queue.OutcomeFailed} {
		if got := queue.OutcomeClass(o); got != want {
			t.Errorf("OutcomeClass(%s) = %s, want %s", o, got, want)
		}
	}
}
