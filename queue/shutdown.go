package queue

import (
	"context"
	"time"
)

// Stop shuts the engine down in two phases: it stops claiming and waits for
// running jobs to finish; when ctx ends first (a grace period, a second
// signal) it stops the running jobs' process groups and puts those jobs
// back as pending without charging the attempt. Safe to call twice.
func (e *Engine) Stop(ctx context.Context) error {
	e.stopOnce.Do(func() {
		// Phase 1: no new claims; running jobs finish and are recorded.
		e.lanes.Stop()
		if e.tidy != nil {
			e.tidy.Stop()
		}
		done := make(chan struct{})
		go func() { e.jobs.Wait(); close(done) }()
		select {
		case <-done:
		case <-ctx.Done():
			// Phase 2: interrupt what still runs.
			n := e.running.stopAll(OutcomeInterrupted)
			e.log.Warn().Int("jobs", n).Msg("stopping running jobs; they will be retried")
			<-done
		}
		e.finish.close()
		e.leases.Stop()
		e.rescuer.Stop()
		e.wakes.Stop()
		// Unregister even when the caller's ctx has ended.
		uctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := e.store.UnregisterWorker(uctx, e.me.ID); err != nil {
			e.stopErr = err // the store names the operation
		}
		e.log.Info().Msg("worker stopped")
	})
	return e.stopErr
}
