package promtext

import (
	"bytes"
	"math"
	"os/exec"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

func encode(t *testing.T, fams []*Family) []byte {
	t.Helper()
	b, err := Encode(fams)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// parse reads the text format with Prometheus's own parser, so what Write
// produces is what a Prometheus server accepts.
func parse(t *testing.T, b []byte) map[string]float64 {
	t.Helper()
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(bytes.NewReader(b))
	if err != nil {
		t.Fatalf("the Prometheus parser rejects the output: %v\n%s", err, b)
	}
	out := map[string]float64{}
	for name, f := range fams {
		for _, m := range f.Metric {
			key := name
			for _, l := range m.Label {
				key += "," + l.GetName() + "=" + l.GetValue()
			}
			switch {
			case m.Gauge != nil:
				out[key] = m.Gauge.GetValue()
			case m.Counter != nil:
				out[key] = m.Counter.GetValue()
			case m.Summary != nil:
				out[key+",count"] = float64(m.Summary.GetSampleCount())
				out[key+",sum"] = m.Summary.GetSampleSum()
				for _, q := range m.Summary.Quantile {
					out[key+",quantile="+formatFloat(q.GetQuantile())] = q.GetValue()
				}
			case m.Histogram != nil:
				out[key+",count"] = float64(m.Histogram.GetSampleCount())
				out[key+",sum"] = m.Histogram.GetSampleSum()
				for _, b := range m.Histogram.Bucket {
					out[key+",le="+formatFloat(b.GetUpperBound())] = float64(b.GetCumulativeCount())
				}
			}
		}
	}
	return out
}

func TestWriteIsValidTextFormat(t *testing.T) {
	jobs := NewFamily("q_jobs", "Jobs by queue\nand state, with a \\ in help.", Gauge, "state", "queue")
	jobs.Add(3, "pending", "mail")
	jobs.Add(1, "dead", `we"ird\`+"\nname")
	runs := NewFamily("q_runs_total", "Runs.", Counter)
	runs.Add(math.Inf(1))
	empty := NewFamily("q_empty", "Nothing recorded.", Gauge, "queue")
	hist := NewFamily("q_seconds", "Run times.", Histogram, "queue")
	hist.AddHistogram([]float64{0.005, 1, 2.5}, []uint64{1, 4, 4}, 6, 12.25, "mail")
	pauses := NewFamily("q_pause_seconds", "Pauses.", Summary)
	pauses.AddSummary([]float64{0, 0.5, 1}, []float64{0.001, 0.002, 0.25}, 9, 0.5)

	b := encode(t, []*Family{runs, jobs, empty, hist, pauses})
	got := parse(t, b)
	want := map[string]float64{
		"q_jobs,queue=mail,state=pending":         3,
		"q_jobs,queue=we\"ird\\\nname,state=dead": 1,
		"q_runs_total":                  math.Inf(1),
		"q_seconds,queue=mail,count":    6,
		"q_seconds,queue=mail,sum":      12.25,
		"q_seconds,queue=mail,le=0.005": 1,
		"q_seconds,queue=mail,le=1":     4,
		"q_seconds,queue=mail,le=2.5":   4,
		"q_seconds,queue=mail,le=+Inf":  6,
		"q_pause_seconds,count":         9,
		"q_pause_seconds,sum":           0.5,
		"q_pause_seconds,quantile=0":    0.001,
		"q_pause_seconds,quantile=0.5":  0.002,
		"q_pause_seconds,quantile=1":    0.25,
	}
	for k, v := range want {
		if g, ok := got[k]; !ok || g != v {
			t.Errorf("%s = %v (present %v), want %v\n%s", k, g, ok, v, string(b))
		}
	}
	if len(got) != len(want) {
		t.Errorf("parsed %d samples, want %d: %v", len(got), len(want), got)
	}
	if strings.Contains(string(b), "q_empty") {
		t.Errorf("a family without series is written:\n%s", string(b))
	}
	// Families by name, labels by name: the same figures read the same.
	if i, j := strings.Index(string(b), "# HELP q_jobs"), strings.Index(string(b), "# HELP q_runs_total"); i > j {
		t.Errorf("families out of name order:\n%s", string(b))
	}
	if !strings.Contains(string(b), `q_jobs{queue="mail",state="pending"} 3`+"\n") {
		t.Errorf("sample line not in the expected form:\n%s", string(b))
	}
}

// Mistakes in what is recorded fail loudly instead of writing what
// Prometheus would reject or misread.
func TestWriteRefusesDuplicates(t *testing.T) {
	a, b := NewFamily("q_jobs", "Jobs.", Gauge, "queue"), NewFamily("q_jobs", "Jobs again.", Gauge, "queue")
	a.Add(1, "mail")
	b.Add(2, "web")
	if out, err := Encode([]*Family{a, b}); err == nil || out != nil {
		t.Errorf("two families of one name: err %v, encoded %q", err, out)
	}
	a.Add(3, "mail")
	if out, err := Encode([]*Family{a}); err == nil || out != nil {
		t.Errorf("two series with the same labels: err %v, encoded %q", err, out)
	}
	defer func() {
		if recover() == nil {
			t.Error("a sample with too few label values was taken")
		}
	}()
	b.Add(4)
}

func TestRuntimeAndProcessFigures(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("process figures come from /proc (Linux)")
	}
	b := encode(t, append(GoRuntime(), NewProcessReader().Self()...))
	got := parse(t, b)
	for _, name := range []string{"go_goroutines", "go_threads", "go_memstats_alloc_bytes", "go_memstats_heap_inuse_bytes",
		"go_memstats_next_gc_bytes", "go_sched_gomaxprocs_threads", "go_gc_gogc_percent",
		"process_resident_memory_bytes", "process_open_fds", "process_max_fds", "process_start_time_seconds"} {
		if got[name] <= 0 {
			t.Errorf("%s = %v, want > 0", name, got[name])
		}
	}
	if _, ok := got["go_gc_duration_seconds,quantile=0.5"]; !ok {
		t.Errorf("no GC pause summary:\n%s", string(b))
	}
}

// A process's start time and CPU time come from its /proc entry: a child
// started between two clock readings reports a start between them (to the
// kernel's 10 ms tick), and a child that spins reports its CPU time.
func TestProcessStartAndCPU(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("process figures come from /proc (Linux)")
	}
	procs := NewProcessReader()
	before := time.Now()
	cmd := exec.Command("sh", "-c", "i=0; while [ $i -lt 200000 ]; do i=$((i+1)); done; sleep 30")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	after := time.Now()
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	got := parse(t, encode(t, procs.read(cmd.Process.Pid)))
	start := got["process_start_time_seconds"]
	// The boot time and the start are each cut to 10 ms ticks.
	lo, hi := float64(before.UnixNano())/1e9-0.05, float64(after.UnixNano())/1e9+0.05
	if start < lo || start > hi {
		t.Errorf("child's process_start_time_seconds %.3f, want within [%.3f, %.3f]", start, lo, hi)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		b := encode(t, procs.read(cmd.Process.Pid))
		again := parse(t, b)
		// A restart alert watches changes of the start time: it must
		// read the same at every scrape.
		if again["process_start_time_seconds"] != start {
			t.Fatalf("process_start_time_seconds moved from %.3f to %.3f", start, again["process_start_time_seconds"])
		}
		if again["process_cpu_seconds_total"] >= 0.05 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("a spinning child's CPU time stays under 50 ms:\n%s", string(b))
		}
		time.Sleep(10 * time.Millisecond)
	}
}
