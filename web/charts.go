package web

import (
	"fmt"
	"html/template"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/queuectl/queuectl/queue"
)

// Charts are SVG drawn on the server: no script, no asset to load, nothing
// for the CSP to allow, and they refresh with the rest of the page.

// chartRange is a window of the overview's charts and its bucket size.
type chartRange struct {
	Key    string // the ?range= value
	Label  string
	Window time.Duration
	Bucket time.Duration
	Format string // time label layout
}

var chartRanges = []chartRange{
	{"1h", "Last hour", time.Hour, 5 * time.Minute, "15:04"},
	{"24h", "Last 24 hours", 24 * time.Hour, time.Hour, "15:04"},
}

// bucketStats are the attempts that finished in one chart bucket.
type bucketStats struct {
	Start     time.Time
	Succeeded int
	Failed    int
	runs      queue.RunTimeHistogram
	P50, P95  time.Duration
}

// FailureRate is the share of failed attempts, or -1 without attempts.
func (b bucketStats) FailureRate() float64 {
	if b.Succeeded+b.Failed == 0 {
		return -1
	}
	return float64(b.Failed) / float64(b.Succeeded+b.Failed)
}

// chartRunTimes is what the charts of rg read at now: the run-time
// histograms of the range, per bucket (its start is a whole bucket, so the
// store reads whole minutes, or hours for buckets of hours).
func chartRunTimes(rg chartRange, now time.Time) queue.RunTimeParams {
	end := now.Truncate(rg.Bucket).Add(rg.Bucket)
	return queue.RunTimeParams{Since: end.Add(-rg.Window), Step: rg.Bucket}
}

// bucketize groups the run times read with chartRunTimes into the range's
// buckets, ending at now. Interrupted attempts are left out.
func bucketize(runs []queue.RunTimeCount, rg chartRange, now time.Time) []bucketStats {
	n := int(rg.Window / rg.Bucket)
	start := chartRunTimes(rg, now).Since
	out := make([]bucketStats, n)
	for i := range out {
		out[i].Start = start.Add(time.Duration(i) * rg.Bucket)
	}
	for _, c := range runs {
		i := int(c.Slot.Sub(start) / rg.Bucket)
		if c.Slot.Before(start) || i >= n || c.Class == queue.OutcomeInterrupted {
			continue
		}
		b := &out[i]
		if c.Class == queue.OutcomeSucceeded {
			b.Succeeded += int(c.N)
		} else {
			b.Failed += int(c.N)
		}
		b.runs.Add(c)
	}
	for i := range out {
		out[i].P50, out[i].P95 = out[i].runs.Quantile(0.5), out[i].runs.Quantile(0.95)
	}
	return out
}

// Chart geometry, in SVG user units.
const (
	chartW, chartH             = 560.0, 200.0
	padL, padR, padT, padB     = 44.0, 12.0, 12.0, 26.0
	plotW, plotH               = chartW - padL - padR, chartH - padT - padB
	colourOK, colourBad        = "#16a34a", "#dc2626"
	colourP50, colourP95, grid = "#2563eb", "#9333ea", "#e2e8f0"
)

// svgChart accumulates SVG elements.
type svgChart struct {
	sb    strings.Builder
	label string
}

func newChart(label string) *svgChart {
	c := &svgChart{label: label}
	fmt.Fprintf(&c.sb, `<svg class="chart" viewBox="0 0 %g %g" role="img" aria-label="%s" xmlns="http://www.w3.org/2000/svg">`,
		chartW, chartH, template.HTMLEscapeString(label))
	return c
}

func (c *svgChart) done() template.HTML {
	c.sb.WriteString(`</svg>`)
	return template.HTML(c.sb.String()) // built only from numbers and escaped labels
}

// axes draws horizontal grid lines with labels for 0..top, and time labels
// under about six buckets: those starting at a whole multiple of the
// labels' spacing (every 10 minutes of the hour, every 4 hours of the
// day), so the labels are round times wherever the window starts.
func (c *svgChart) axes(top float64, unit func(float64) string, buckets []bucketStats, rg chartRange) {
	for i := 0; i <= 4; i++ {
		v := top * float64(i) / 4
		y := padT + plotH - plotH*float64(i)/4
		fmt.Fprintf(&c.sb, `<line x1="%g" y1="%.1f" x2="%g" y2="%.1f" stroke="%s" stroke-width="1"/>`, padL, y, chartW-padR, y, grid)
		fmt.Fprintf(&c.sb, `<text x="%g" y="%.1f" class="axis" text-anchor="end">%s</text>`, padL-6, y+4, template.HTMLEscapeString(unit(v)))
	}
	every := time.Duration(max(1, len(buckets)/6)) * rg.Bucket
	bw := plotW / float64(len(buckets))
	for i, b := range buckets {
		if !b.Start.Truncate(every).Equal(b.Start) {
			continue
		}
		x := padL + bw*float64(i) + bw/2
		fmt.Fprintf(&c.sb, `<text x="%.1f" y="%g" class="axis" text-anchor="middle">%s</text>`, x, chartH-8, b.Start.Format(rg.Format))
	}
}

// niceTop rounds a maximum up to 1, 2 or 5 times a power of ten.
func niceTop(v float64) float64 {
	if v <= 0 {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{1, 2, 5, 10} {
		if v <= m*p {
			return m * p
		}
	}
	return 10 * p
}

// throughputChart stacks succeeded and failed attempts per bucket.
func throughputChart(buckets []bucketStats, rg chartRange) template.HTML {
	c := newChart("Finished attempts per " + rg.Bucket.String())
	top := 0
	for _, b := range buckets {
		top = max(top, b.Succeeded+b.Failed)
	}
	t := niceTop(float64(top))
	c.axes(t, func(v float64) string { return fmt.Sprintf("%g", v) }, buckets, rg)
	bw := plotW / float64(len(buckets))
	for i, b := range buckets {
		x := padL + bw*float64(i) + bw*0.15
		hOK := plotH * float64(b.Succeeded) / t
		hBad := plotH * float64(b.Failed) / t
		base := padT + plotH
		title := fmt.Sprintf("%s: %d succeeded, %d failed", b.Start.Format(rg.Format), b.Succeeded, b.Failed)
		fmt.Fprintf(&c.sb, `<g><title>%s</title>`, template.HTMLEscapeString(title))
		if hOK > 0 {
			fmt.Fprintf(&c.sb, `<rect class="bar-ok" x="%.1f" y="%.1f" width="%.1f" height="%.1f" rx="2" fill="%s"/>`, x, base-hOK, bw*0.7, hOK, colourOK)
		}
		if hBad > 0 {
			fmt.Fprintf(&c.sb, `<rect class="bar-bad" x="%.1f" y="%.1f" width="%.1f" height="%.1f" rx="2" fill="%s"/>`, x, base-hOK-hBad, bw*0.7, hBad, colourBad)
		}
		c.sb.WriteString(`</g>`)
	}
	return c.done()
}

// lineChart draws one polyline per series; NaN values leave gaps.
func lineChart(label string, buckets []bucketStats, rg chartRange, top float64, unit func(float64) string,
	series ...lineSeries) template.HTML {
	c := newChart(label)
	c.axes(top, unit, buckets, rg)
	bw := plotW / float64(len(buckets))
	for _, s := range series {
		var pts []string
		flush := func() {
			if len(pts) == 1 {
				xy := strings.Split(pts[0], ",")
				fmt.Fprintf(&c.sb, `<circle cx="%s" cy="%s" r="3" fill="%s"/>`, xy[0], xy[1], s.colour)
			} else if len(pts) > 1 {
				fmt.Fprintf(&c.sb, `<polyline class="line" fill="none" stroke="%s" stroke-width="2.5" stroke-linejoin="round" points="%s"/>`,
					s.colour, strings.Join(pts, " "))
			}
			pts = nil
		}
		for i, b := range buckets {
			v := s.value(b)
			if math.IsNaN(v) {
				flush()
				continue
			}
			x := padL + bw*float64(i) + bw/2
			y := padT + plotH - plotH*math.Min(v, top)/top
			pts = append(pts, fmt.Sprintf("%.1f,%.1f", x, y))
		}
		flush()
	}
	return c.done()
}

type lineSeries struct {
	colour string
	value  func(bucketStats) float64
}

func failureChart(buckets []bucketStats, rg chartRange) template.HTML {
	top := 0.0
	for _, b := range buckets {
		top = math.Max(top, b.FailureRate())
	}
	top = math.Min(1, niceTop(math.Max(top, 0.05)))
	return lineChart("Failure rate", buckets, rg, top, func(v float64) string { return strconv.FormatFloat(v*100, 'g', 3, 64) + "%" },
		lineSeries{colourBad, func(b bucketStats) float64 {
			if r := b.FailureRate(); r >= 0 {
				return r
			}
			return math.NaN()
		}})
}

func runTimeChart(buckets []bucketStats, rg chartRange) template.HTML {
	top := 0.0
	for _, b := range buckets {
		top = math.Max(top, b.P95.Seconds())
	}
	// Over two minutes the axis counts minutes, so its top is a round
	// number of them.
	if top > 120 {
		top = niceTop(top/60) * 60
	} else {
		top = niceTop(top)
	}
	pick := func(f func(bucketStats) time.Duration) func(bucketStats) float64 {
		return func(b bucketStats) float64 {
			if b.runs.Count() == 0 {
				return math.NaN()
			}
			return f(b).Seconds()
		}
	}
	return lineChart("Run time p50 and p95", buckets, rg, top, secondsLabels(top),
		lineSeries{colourP95, pick(func(b bucketStats) time.Duration { return b.P95 })},
		lineSeries{colourP50, pick(func(b bucketStats) time.Duration { return b.P50 })})
}

// secondsLabels returns the labels of an axis of seconds from 0 to top,
// in the one unit that suits top (ms, s or m), each exact to three
// significant digits: the lines are a quarter of top apart, so 3.75ms
// must not read as 4ms beside 2.5ms read as 2ms.
func secondsLabels(top float64) func(float64) string {
	unit, scale := "m", 1.0/60
	switch {
	case top < 1:
		unit, scale = "ms", 1000
	case top <= 120:
		unit, scale = "s", 1
	}
	return func(v float64) string {
		if v == 0 {
			return "0"
		}
		return strconv.FormatFloat(v*scale, 'g', 3, 64) + unit
	}
}
