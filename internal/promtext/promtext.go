// Package promtext writes metrics in the Prometheus text exposition format
// (version 0.0.4): metric families with their help and type, samples with
// escaped labels, histograms as cumulative buckets, and the Go runtime's and
// this process's own figures under the names Prometheus client libraries use
// (go_*, process_*).
//
// It is a few hundred lines instead of a client library because every
// queuectl command links the web server: a client library's package
// initialisation (its registries, regular expressions and protocol buffer
// descriptors) cost each short-lived `queuectl enqueue` about 0.7 ms of its
// 5 ms of CPU.
package promtext

import (
	"bufio"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
)

// Type is a metric family's type.
type Type string

// The metric types this package writes.
const (
	Gauge     Type = "gauge"
	Counter   Type = "counter"
	Histogram Type = "histogram"
)

// Family is one metric: a name, its help text and type, and its samples.
type Family struct {
	Name   string
	Help   string
	Type   Type
	Labels []string // label names, in the order sample values are given
	series []series
}

type series struct {
	values []string
	value  float64
	hist   *hist
}

type hist struct {
	bounds []float64
	counts []uint64 // cumulative, one per bound
	count  uint64
	sum    float64
}

// NewFamily describes a metric family.
func NewFamily(name, help string, typ Type, labels ...string) *Family {
	return &Family{Name: name, Help: help, Type: typ, Labels: labels}
}

// Add records one sample of a gauge or counter with the given label values.
func (f *Family) Add(value float64, labelValues ...string) {
	f.series = append(f.series, series{values: labelValues, value: value})
}

// AddHistogram records one histogram: cumulative counts per upper bound
// (ascending), the total count (the +Inf bucket) and the sum.
func (f *Family) AddHistogram(bounds []float64, cumulative []uint64, count uint64, sum float64, labelValues ...string) {
	f.series = append(f.series, series{values: labelValues,
		hist: &hist{bounds: bounds, counts: cumulative, count: count, sum: sum}})
}

// Len reports how many series the family holds.
func (f *Family) Len() int { return len(f.series) }

// Write writes the families in the text format: families by name, series
// by label values, so a scrape reads the same whatever order the figures
// were gathered in. A family without series is left out.
func Write(w io.Writer, families []*Family) error {
	bw := bufio.NewWriter(w)
	fams := slices.Clone(families)
	slices.SortStableFunc(fams, func(a, b *Family) int { return strings.Compare(a.Name, b.Name) })
	for _, f := range fams {
		if len(f.series) == 0 {
			continue
		}
		bw.WriteString("# HELP " + f.Name + " " + escapeHelp(f.Help) + "\n")
		bw.WriteString("# TYPE " + f.Name + " " + string(f.Type) + "\n")
		ss := slices.Clone(f.series)
		slices.SortStableFunc(ss, func(a, b series) int { return slices.Compare(a.values, b.values) })
		for _, s := range ss {
			if s.hist == nil {
				writeSample(bw, f.Name, f.Labels, s.values, "", "", s.value)
				continue
			}
			for i, b := range s.hist.bounds {
				writeSample(bw, f.Name+"_bucket", f.Labels, s.values, "le", formatFloat(b), float64(s.hist.counts[i]))
			}
			writeSample(bw, f.Name+"_bucket", f.Labels, s.values, "le", "+Inf", float64(s.hist.count))
			writeSample(bw, f.Name+"_sum", f.Labels, s.values, "", "", s.hist.sum)
			writeSample(bw, f.Name+"_count", f.Labels, s.values, "", "", float64(s.hist.count))
		}
	}
	return bw.Flush()
}

// writeSample writes one line; labels come sorted by name, with the extra
// label (le) last as client libraries write it.
func writeSample(w *bufio.Writer, name string, names, values []string, extraName, extraValue string, v float64) {
	w.WriteString(name)
	type pair struct{ n, v string }
	pairs := make([]pair, 0, len(names)+1)
	for i, n := range names {
		val := ""
		if i < len(values) {
			val = values[i]
		}
		pairs = append(pairs, pair{n, val})
	}
	slices.SortFunc(pairs, func(a, b pair) int { return strings.Compare(a.n, b.n) })
	if extraName != "" {
		pairs = append(pairs, pair{extraName, extraValue})
	}
	if len(pairs) > 0 {
		w.WriteByte('{')
		for i, p := range pairs {
			if i > 0 {
				w.WriteByte(',')
			}
			w.WriteString(p.n + `="` + escapeLabel(p.v) + `"`)
		}
		w.WriteByte('}')
	}
	w.WriteByte(' ')
	w.WriteString(formatFloat(v))
	w.WriteByte('\n')
}

func formatFloat(v float64) string {
	switch {
	case math.IsInf(v, 1):
		return "+Inf"
	case math.IsInf(v, -1):
		return "-Inf"
	case math.IsNaN(v):
		return "NaN"
	}
	return strconv.FormatFloat(v, 'g', -1, 64)
}

var (
	helpEscaper  = strings.NewReplacer(`\`, `\\`, "\n", `\n`)
	labelEscaper = strings.NewReplacer(`\`, `\\`, "\n", `\n`, `"`, `\"`)
)

func escapeHelp(s string) string  { return helpEscaper.Replace(s) }
func escapeLabel(s string) string { return labelEscaper.Replace(s) }
