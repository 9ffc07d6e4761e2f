package storetest

import (
	"context"
	"strconv"
	"testing"

	"github.com/queuectl/queuectl/internal/bench"
	"github.com/queuectl/queuectl/queue"
)

// BenchEngineNoop is queuectl bench's engine scenario (bench.RunNoopEngine)
// as a Go benchmark, on a store open returns empty, at 1, 8 and 64 slots:
// a store package calls it from its own BenchmarkEngineNoop, so that go
// test's profilers (-cpuprofile, -memprofile) reach it. It reports jobs/s,
// jobs per claim, jobs per finish batch and the process's CPU time (user
// and system) per job. It lives here, with the other
// test helpers, so that the queuectl binary does not link package testing.
func BenchEngineNoop(b *testing.B, open func(b *testing.B) queue.Store) {
	for _, slots := range []int{1, 8, 64} {
		b.Run("slots="+strconv.Itoa(slots), func(b *testing.B) {
			ctx := context.Background()
			st := open(b)
			if err := bench.AddJobs(ctx, st, b.N, "noop"); err != nil {
				b.Fatal(err)
			}
			b.ResetTimer()
			run, err := bench.RunNoopEngine(ctx, st, b.N, slots)
			b.StopTimer()
			if err != nil {
				b.Fatal(err)
			}
			b.ReportMetric(float64(b.N)/run.Elapsed.Seconds(), "jobs/s")
			b.ReportMetric(float64(run.Claimed)/float64(max(1, run.Claims)), "jobs/claim")
			b.ReportMetric(float64(b.N)/float64(max(1, run.Finishes)), "jobs/finish")
			b.ReportMetric(float64(run.CPU.Microseconds())/float64(b.N), "cpu-µs/job")
		})
	}
}
