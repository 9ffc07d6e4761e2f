package promtext

import (
	"bytes"
	"math"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

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
	jobs := NewFamily("q_jobs", "Jobs by queue\nand state, with a \\ in help.", Gauge, "queue", "state")
	jobs.Add(3, "mail", "pending")
	jobs.Add(1, `we"ird\`+"\nname", "dead")
	runs := NewFamily("q_runs_total", "Runs.", Counter)
	runs.Add(math.Inf(1))
	empty := NewFamily("q_empty", "Nothing recorded.", Gauge, "queue")
	hist := NewFamily("q_seconds", "Run times.", Histogram, "queue")
	hist.AddHistogram([]float64{0.005, 1, 2.5}, []uint64{1, 4, 4}, 6, 12.25, "mail")

	var b bytes.Buffer
	if err := Write(&b, []*Family{runs, jobs, empty, hist}); err != nil {
		t.Fatal(err)
	}
	got := parse(t, b.Bytes())
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
	}
	for k, v := range want {
		if g, ok := got[k]; !ok || g != v {
			t.Errorf("%s = %v (present %v), want %v\n%s", k, g, ok, v, b.String())
		}
	}
	if len(got) != len(want) {
		t.Errorf("parsed %d samples, want %d: %v", len(got), len(want), got)
	}
	if strings.Contains(b.String(), "q_empty") {
		t.Errorf("a family without series is written:\n%s", b.String())
	}
	// Families by name, labels by name: the same figures read the same.
	if i, j := strings.Index(b.String(), "# HELP q_jobs"), strings.Index(b.String(), "# HELP q_runs_total"); i > j {
		t.Errorf("families out of name order:\n%s", b.String())
	}
	if !strings.Contains(b.String(), `q_jobs{queue="mail",state="pending"} 3`+"\n") {
		t.Errorf("sample line not in the expected form:\n%s", b.String())
	}
}

func TestRuntimeAndProcessFigures(t *testing.T) {
	var b bytes.Buffer
	if err := Write(&b, append(GoRuntime(), Process()...)); err != nil {
		t.Fatal(err)
	}
	got := parse(t, b.Bytes())
	for _, name := range []string{"go_goroutines", "go_threads", "go_memstats_alloc_bytes", "go_sched_gomaxprocs_threads",
		"process_resident_memory_bytes", "process_open_fds", "process_max_fds", "process_start_time_seconds"} {
		if got[name] <= 0 {
			t.Errorf("%s = %v, want > 0", name, got[name])
		}
	}
}

// A process's start time and CPU time come from its /proc entry: a child
// started between two clock readings reports a start between them (to the
// kernel's 10 ms tick), and a child that spins reports its CPU time.
func TestProcessStartAndCPU(t *testing.T) {
	before := time.Now()
	cmd := exec.Command("sh", "-c", "i=0; while [ $i -lt 200000 ]; do i=$((i+1)); done; sleep 30")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	after := time.Now()
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	dir := "/proc/" + strconv.Itoa(cmd.Process.Pid)
	var b bytes.Buffer
	if err := Write(&b, process(dir)); err != nil {
		t.Fatal(err)
	}
	got := parse(t, b.Bytes())
	start := got["process_start_time_seconds"]
	lo, hi := float64(before.UnixNano())/1e9-0.02, float64(after.UnixNano())/1e9+0.02
	if start < lo || start > hi {
		t.Errorf("child's process_start_time_seconds %.3f, want within [%.3f, %.3f]", start, lo, hi)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		b.Reset()
		Write(&b, process(dir))
		if cpu := parse(t, b.Bytes())["process_cpu_seconds_total"]; cpu >= 0.05 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("a spinning child's CPU time stays under 50 ms:\n%s", b.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
}
