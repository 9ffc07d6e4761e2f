package storetest

import (
	"context"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/queuectl/queuectl/internal/proc"
	"github.com/queuectl/queuectl/queue"
	"github.com/rs/zerolog"
)

// BenchEngineNoop measures claim+complete cycles of the real engine loop
// with a runner that does nothing, at 1, 8 and 64 slots, on a store that
// open returns empty: the engine's and the store's own cost per job, with
// jobs/s, jobs per claim and jobs per finish batch as metrics. queuectl
// bench reports the same figure; this one runs under go test's profilers
// (-cpuprofile, -memprofile).
func BenchEngineNoop(b *testing.B, open func(b *testing.B) queue.Store) {
	for _, slots := range []int{1, 8, 64} {
		b.Run("slots="+strconv.Itoa(slots), func(b *testing.B) {
			st := open(b)
			now := time.Now()
			var jobs []*queue.Job
			for i := range b.N {
				j, _ := queue.NewJob{ID: "j" + strconv.Itoa(i), Command: "noop"}.Resolve(queue.DefaultSettings(), now)
				jobs = append(jobs, j)
			}
			for i := 0; i < len(jobs); i += 10_000 {
				if err := st.InsertJobs(context.Background(), jobs[i:min(i+10_000, len(jobs))]); err != nil {
					b.Fatal(err)
				}
			}
			c := &countingStore{Store: st, n: int64(b.N), ch: make(chan struct{})}
			noop := queue.RunnerFunc(func(context.Context, queue.RunSpec) queue.RunResult {
				t := time.Now().UTC()
				return queue.RunResult{Started: t, Finished: t}
			})
			eng := queue.NewEngine(c, noop, queue.EngineConfig{Lanes: []queue.Lane{{Slots: slots}}, Log: zerolog.Nop(), Processes: proc.Host{}})
			b.ResetTimer()
			if err := eng.Start(context.Background()); err != nil {
				b.Fatal(err)
			}
			<-c.ch
			b.StopTimer()
			eng.Stop(context.Background())
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "jobs/s")
			b.ReportMetric(float64(c.claimed.Load())/float64(max(1, c.claims.Load())), "jobs/claim")
			b.ReportMetric(float64(b.N)/float64(max(1, c.finishes.Load())), "jobs/finish")
		})
	}
}

// countingStore counts claims and finish batches, and signals when n
// outcomes have been recorded.
type countingStore struct {
	queue.Store
	n    int64
	done atomic.Int64
	ch   chan struct{}

	claims, claimed, finishes atomic.Int64
}

func (c *countingStore) ClaimJobs(ctx context.Context, p queue.ClaimParams) ([]*queue.Job, error) {
	jobs, err := c.Store.ClaimJobs(ctx, p)
	c.claims.Add(1)
	c.claimed.Add(int64(len(jobs)))
	return jobs, err
}

func (c *countingStore) FinishJobs(ctx context.Context, fs []queue.Finish) ([]bool, error) {
	applied, err := c.Store.FinishJobs(ctx, fs)
	c.finishes.Add(1)
	for _, ok := range applied {
		if ok && c.done.Add(1) == c.n {
			close(c.ch)
		}
	}
	return applied, err
}
