package bench

import (
	"context"
	"fmt"
	"time"

	"github.com/queuectl/queuectl/internal/proc"
	"github.com/queuectl/queuectl/queue"
	"github.com/rs/zerolog"
)

// EngineRun is what one run of the engine over no-op jobs took.
type EngineRun struct {
	Elapsed  time.Duration // from the engine's start to the last outcome applied
	Claims   int64         // claim calls
	Claimed  int64         // jobs they took
	Finishes int64         // finish batches
	CPU      time.Duration // this process's CPU time (user + system) over Elapsed
}

// RunNoopEngine runs n jobs already in st through an in-process engine of
// one lane with the given slots and a runner that does nothing, until all
// n outcomes are applied: the engine's and the store's own cost per job.
func RunNoopEngine(ctx context.Context, st queue.Store, n, slots int) (EngineRun, error) {
	c, wrapped := countingStore(st, n)
	noop := queue.RunnerFunc(func(ctx context.Context, spec queue.RunSpec) queue.RunResult {
		now := time.Now().UTC()
		return queue.RunResult{ExitCode: 0, Started: now, Finished: now}
	})
	eng := queue.NewEngine(wrapped, noop, queue.EngineConfig{Lanes: []queue.Lane{{Slots: slots}}, Log: zerolog.Nop(), Processes: proc.Host{}})
	start, cpu0 := time.Now(), selfCPU()
	if err := eng.Start(ctx); err != nil {
		return EngineRun{}, err
	}
	var err error
	select {
	case <-c.ch:
	case <-time.After(10 * time.Minute):
		err = fmt.Errorf("engine did not finish %d jobs in 10 minutes (%d done)", n, c.done.Load())
	case <-ctx.Done():
		err = ctx.Err()
	}
	run := EngineRun{Elapsed: time.Since(start), CPU: selfCPU() - cpu0, Claims: c.claims.Load(), Claimed: c.claimed.Load(), Finishes: c.finishes.Load()}
	if serr := eng.Stop(context.Background()); err == nil {
		err = serr
	}
	return run, err
}
