package queue

import (
	"math"
	"sort"
	"time"
)

// Statistics of finished attempts (queuectl stats, the dashboard's charts)
// are read from run-time histograms the stores keep as attempts finish,
// not from the attempts themselves: per queue, outcome class, run-time
// bucket and time slot, the number of attempts and their least and
// greatest run time. A slot is a minute or an hour (the attempt is counted
// in both), by its end; a window sums the hours it covers whole and the
// minutes at its start, so that a day is at most 24 hour rows and 60
// minute rows per queue, class and bucket, however many attempts it holds.
// Deleting a job takes its attempts out of the histograms again, so they
// describe the history the store holds, as the attempts do.

// Run-time slot lengths.
const (
	MinuteSlot = time.Minute
	HourSlot   = time.Hour
)

// RunTimeBucketRatio is the width of a run-time bucket relative to its
// lower bound, at most: a figure read from a bucket is within half of it
// (1/64, about 1.6 %) of the attempt's run time. Run times of a
// millisecond or less share one bucket.
const RunTimeBucketRatio = 32

// runTimeFirst and runTimeLast are the first and the last finite upper
// bounds, in microseconds; the last bucket is unbounded.
const (
	runTimeFirst = 1000
	runTimeLast  = 1 << 47 // about 4.5 years
)

// runTimeBounds are the buckets' upper bounds in microseconds. Each is the
// one before plus a 32nd of it (integer division), a rule both stores'
// migrations repeat in SQL (table run_buckets), so that a bucket means the
// same in Go and in the database.
var runTimeBounds = func() []int64 {
	b := []int64{runTimeFirst}
	for le := int64(runTimeFirst); le+le/RunTimeBucketRatio <= runTimeLast; {
		le += le / RunTimeBucketRatio
		b = append(b, le)
	}
	return append(b, math.MaxInt64)
}()

// RunTimeBounds returns the run-time buckets' upper bounds in
// microseconds, ascending; the last is math.MaxInt64.
func RunTimeBounds() []int64 { return append([]int64(nil), runTimeBounds...) }

// RunTimeBucket is the upper bound of the run-time bucket that holds a run
// time of us microseconds.
func RunTimeBucket(us int64) int64 {
	return runTimeBounds[sort.Search(len(runTimeBounds), func(i int) bool { return runTimeBounds[i] >= us })]
}

// RunMicros is an attempt's run time in microseconds as both stores count
// it: from its start to its end, each cut to the microsecond the stores
// keep (0 when it never started).
func RunMicros(a Attempt) int64 {
	if a.StartedAt.IsZero() {
		return 0
	}
	return a.FinishedAt.UnixMicro() - a.StartedAt.UnixMicro()
}

// metricBounds are the monitoring histograms' upper bounds in microseconds
// (both stores' table metric_buckets); the last is unbounded.
var metricBounds = [...]int64{5000, 10000, 25000, 50000, 100000, 250000, 500000, 1000000, 2500000,
	5000000, 10000000, 30000000, 60000000, 120000000, 300000000, 600000000, 1800000000, 3600000000,
	math.MaxInt64}

// MetricBucket is the upper bound of the monitoring histogram bucket (run
// times, start delays) that holds us microseconds.
func MetricBucket(us int64) int64 {
	for _, le := range metricBounds {
		if us <= le {
			return le
		}
	}
	return metricBounds[len(metricBounds)-1]
}

// runTimeFloor is the lower bound (exclusive) of the bucket whose upper
// bound is le, in microseconds: 0 for the first bucket.
func runTimeFloor(le int64) int64 {
	i := sort.Search(len(runTimeBounds), func(i int) bool { return runTimeBounds[i] >= le })
	if i == 0 {
		return 0
	}
	return runTimeBounds[i-1]
}

// OutcomeClass is how the statistics count an outcome: succeeded,
// interrupted (not charged to the job), or failed (every other outcome).
func OutcomeClass(o Outcome) Outcome {
	switch o {
	case OutcomeSucceeded, OutcomeInterrupted:
		return o
	}
	return OutcomeFailed
}

// RunTimeParams selects the attempts RunTimes sums: those that finished
// in the minute that holds Since or later. With Step set (a whole number
// of minutes), it sums them per slot of Step from that minute on.
type RunTimeParams struct {
	Since time.Time
	Step  time.Duration
}

// Start is the start of the first minute RunTimes counts.
func (p RunTimeParams) Start() time.Time { return p.Since.UTC().Truncate(MinuteSlot) }

// Hours is where RunTimes reads hour slots instead of minutes: the first
// whole hour after Start, or the zero time when the steps cannot be made
// of hours (they are not whole hours from a whole hour).
func (p RunTimeParams) Hours() time.Time {
	start := p.Start()
	if p.Step > 0 && (p.Step%HourSlot != 0 || !start.Truncate(HourSlot).Equal(start)) {
		return time.Time{}
	}
	h := start.Truncate(HourSlot)
	if h.Before(start) {
		h = h.Add(HourSlot)
	}
	return h
}

// RunTimeCount is one bucket of a run-time histogram summed over a window
// (or one step of it): the attempts of a queue and outcome class whose run
// time was above the bucket before's bound and at most LE.
type RunTimeCount struct {
	Queue string
	Slot  time.Time // the step's start; the zero time without Step
	Class Outcome   // OutcomeSucceeded, OutcomeFailed or OutcomeInterrupted
	LE    int64     // the bucket's upper bound in microseconds (RunTimeBounds)
	N     int64
	// Min and Max are the least and greatest run times counted, in
	// microseconds. Deleting jobs leaves them as they were: they stay
	// within the bucket, and an estimate clamped to them stays as close.
	Min, Max int64
}

// SlowestParams selects the attempts SlowestAttempts returns.
type SlowestParams struct {
	Since time.Time // from the start of its minute on, as RunTimes
	Limit int
}

// RunTimeHistogram adds up RunTimeCounts and reads run-time figures from
// them. The zero value is empty.
type RunTimeHistogram struct {
	buckets map[int64]*RunTimeCount
	n       int64
}

// Add counts c in the histogram.
func (h *RunTimeHistogram) Add(c RunTimeCount) {
	if c.N <= 0 {
		return
	}
	if h.buckets == nil {
		h.buckets = map[int64]*RunTimeCount{}
	}
	b := h.buckets[c.LE]
	if b == nil {
		h.buckets[c.LE] = &RunTimeCount{LE: c.LE, N: c.N, Min: c.Min, Max: c.Max}
	} else {
		b.N += c.N
		b.Min, b.Max = min(b.Min, c.Min), max(b.Max, c.Max)
	}
	h.n += c.N
}

// Count is the number of attempts counted.
func (h *RunTimeHistogram) Count() int64 { return h.n }

func (h *RunTimeHistogram) sorted() []*RunTimeCount {
	out := make([]*RunTimeCount, 0, len(h.buckets))
	for _, b := range h.buckets {
		out = append(out, b)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].LE < out[j].LE })
	return out
}

// Quantile estimates the run time at rank ⌈p·n⌉ of the n run times
// counted, in order (the nearest-rank percentile), from the bucket that
// holds that rank: its middle, kept within the least and greatest run time
// it counted. The estimate is within half a bucket (RunTimeBucketRatio) of
// the exact figure. An empty histogram gives 0.
func (h *RunTimeHistogram) Quantile(p float64) time.Duration {
	if h.n == 0 {
		return 0
	}
	rank := max(1, int64(math.Ceil(p*float64(h.n))))
	var seen int64
	bs := h.sorted()
	for _, b := range bs {
		seen += b.N
		if seen >= rank {
			return estimate(b)
		}
	}
	return estimate(bs[len(bs)-1])
}

// estimate is a bucket's middle kept within its least and greatest run
// time.
func estimate(b *RunTimeCount) time.Duration {
	lo := runTimeFloor(b.LE)
	mid := b.Max
	if b.LE != math.MaxInt64 {
		mid = lo + (b.LE-lo)/2
	}
	return time.Duration(min(max(mid, b.Min), b.Max)) * time.Microsecond
}

// Min is the least run time counted (0 for none).
func (h *RunTimeHistogram) Min() time.Duration {
	if h.n == 0 {
		return 0
	}
	return time.Duration(h.sorted()[0].Min) * time.Microsecond
}

// Max is the greatest run time counted (0 for none).
func (h *RunTimeHistogram) Max() time.Duration {
	if h.n == 0 {
		return 0
	}
	bs := h.sorted()
	return time.Duration(bs[len(bs)-1].Max) * time.Microsecond
}
