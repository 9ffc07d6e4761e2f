package sqlite_test

import (
	"context"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/queuectl/queuectl/queue"
)

// BenchmarkClaimFinish is the store's share of one engine cycle: claim one
// job, record its outcome.
func BenchmarkClaimFinish(b *testing.B) {
	for _, batch := range []int{1, 8, 64} {
		b.Run("batch="+strconv.Itoa(batch), func(b *testing.B) {
			s := openBench(b)
			ctx := context.Background()
			now := time.Now().UTC()
			var jobs []*queue.Job
			for i := range b.N + batch {
				j, _ := queue.NewJob{ID: "j" + strconv.Itoa(i), Command: "true"}.Resolve(queue.DefaultSettings(), now)
				jobs = append(jobs, j)
			}
			for i := 0; i < len(jobs); i += 10000 {
				if err := s.InsertJobs(ctx, jobs[i:min(i+10000, len(jobs))]); err != nil {
					b.Fatal(err)
				}
			}
			code := 0
			b.ResetTimer()
			cpu0 := cpuTime()
			for done := 0; done < b.N; {
				claimed, err := s.ClaimJobs(ctx, queue.ClaimParams{Worker: "w", Limit: batch, Now: now.Add(time.Second), LeaseUntil: now.Add(time.Minute)})
				if err != nil {
					b.Fatal(err)
				}
				fs := make([]queue.Finish, len(claimed))
				for i, j := range claimed {
					fs[i] = queue.RetryPolicy{}.Decide(j, "w", queue.End{Outcome: queue.OutcomeSucceeded, ExitCode: &code, Started: now, Finished: now}, now)
				}
				if _, err := s.FinishJobs(ctx, fs); err != nil {
					b.Fatal(err)
				}
				done += len(claimed)
			}
			b.ReportMetric(float64((cpuTime()-cpu0).Microseconds())/float64(b.N), "cpu-µs/job")
		})
	}
}

// cpuTime is the CPU time (user and system) the process has used.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func openBench(b *testing.B) queue.Store {
	b.Helper()
	s, err := sqliteOpen(filepath.Join(b.TempDir(), "queue.db"))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.Close() })
	return s
}
