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
	"bytes"
	"fmt"
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
	Summary   Type = "summary"
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
	dist   *distribution
}

// distribution is a histogram's buckets or a summary's quantiles.
type distribution struct {
	bounds []float64 // upper bounds (histogram) or quantiles (summary), ascending
	values []float64 // cumulative counts per bound, or the quantiles' values
	count  uint64
	sum    float64
}

// NewFamily describes a metric family.
func NewFamily(name, help string, typ Type, labels ...string) *Family {
	return &Family{Name: name, Help: help, Type: typ, Labels: labels}
}

// Add records one sample of a gauge or counter with the given label values,
// one per label name. A wrong count is a programming error: it panics.
func (f *Family) Add(value float64, labelValues ...string) {
	f.check(labelValues)
	f.series = append(f.series, series{values: labelValues, value: value})
}

// AddHistogram records one histogram: cumulative counts per upper bound
// (ascending), the total count (the +Inf bucket) and the sum.
func (f *Family) AddHistogram(bounds []float64, cumulative []uint64, count uint64, sum float64, labelValues ...string) {
	f.check(labelValues)
	vs := make([]float64, len(cumulative))
	for i, c := range cumulative {
		vs[i] = float64(c)
	}
	f.series = append(f.series, series{values: labelValues,
		dist: &distribution{bounds: bounds, values: vs, count: count, sum: sum}})
}

// AddSummary records one summary: the values at the given quantiles
// (ascending, 0 to 1), the count of observations and their sum.
func (f *Family) AddSummary(quantiles, values []float64, count uint64, sum float64, labelValues ...string) {
	f.check(labelValues)
	f.series = append(f.series, series{values: labelValues,
		dist: &distribution{bounds: quantiles, values: values, count: count, sum: sum}})
}

func (f *Family) check(labelValues []string) {
	if len(labelValues) != len(f.Labels) {
		panic(fmt.Sprintf("promtext: %s takes %d label values, got %d", f.Name, len(f.Labels), len(labelValues)))
	}
}

// Len reports how many series the family holds.
func (f *Family) Len() int { return len(f.series) }

// Encode returns the families in the text format: families by name, series
// by label values, so a scrape reads the same whatever order the figures
// were gathered in. A family without series is left out. Two families of
// one name or two series of one family with the same label values are an
// error.
func Encode(families []*Family) ([]byte, error) {
	var b bytes.Buffer
	fams := slices.Clone(families)
	slices.SortStableFunc(fams, func(a, b *Family) int { return strings.Compare(a.Name, b.Name) })
	for i, f := range fams {
		if i > 0 && fams[i-1].Name == f.Name {
			return nil, fmt.Errorf("encode metrics: two families named %s", f.Name)
		}
		if len(f.series) == 0 {
			continue
		}
		b.WriteString("# HELP " + f.Name + " " + escapeHelp(f.Help) + "\n")
		b.WriteString("# TYPE " + f.Name + " " + string(f.Type) + "\n")
		ss := slices.Clone(f.series)
		slices.SortStableFunc(ss, func(a, b series) int { return slices.Compare(a.values, b.values) })
		for j, s := range ss {
			if j > 0 && slices.Equal(ss[j-1].values, s.values) {
				return nil, fmt.Errorf("encode metrics: %s has two series labelled %q", f.Name, s.values)
			}
			if s.dist == nil {
				writeSample(&b, f.Name, f.Labels, s.values, "", "", s.value)
				continue
			}
			if f.Type == Summary {
				for i, q := range s.dist.bounds {
					writeSample(&b, f.Name, f.Labels, s.values, "quantile", formatFloat(q), s.dist.values[i])
				}
			} else {
				for i, le := range s.dist.bounds {
					writeSample(&b, f.Name+"_bucket", f.Labels, s.values, "le", formatFloat(le), s.dist.values[i])
				}
				writeSample(&b, f.Name+"_bucket", f.Labels, s.values, "le", "+Inf", float64(s.dist.count))
			}
			writeSample(&b, f.Name+"_sum", f.Labels, s.values, "", "", s.dist.sum)
			writeSample(&b, f.Name+"_count", f.Labels, s.values, "", "", float64(s.dist.count))
		}
	}
	return b.Bytes(), nil
}

// writeSample writes one line; labels come sorted by name, with the extra
// label (le, quantile) last as client libraries write it.
func writeSample(w *bytes.Buffer, name string, names, values []string, extraName, extraValue string, v float64) {
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
