// Package supervise owns worker processes as the operating system sees
// them: running one worker until its signals say stop (two phases: drain,
// then interrupt), starting workers detached in their own session with a
// log file each and waiting until they registered, running several attached
// to a terminal, and stopping this host's workers (signals) or other hosts'
// (stop requests through the store). cmd/queuectl wires it to its commands.
package supervise

import (
	"context"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/rs/zerolog"
)

// Serve runs a long-lived service until SIGINT or SIGTERM (or until it asks
// to stop), then stops it in two phases: the first signal drains, a second
// signal or the grace period ends running work.
func Serve(ctx context.Context, log zerolog.Logger, grace time.Duration,
	start func(context.Context) error, stop func(context.Context) error, asked <-chan struct{}) error {
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
	defer signal.Stop(sigs)
	if err := start(ctx); err != nil {
		return err
	}
	select {
	case s := <-sigs:
		log.Info().Str("signal", s.String()).Int64("grace_ms", grace.Milliseconds()).
			Msg("stopping: running jobs may finish (send the signal again to stop them)")
	case <-asked:
		log.Info().Msg("stop requested: running jobs may finish")
	case <-ctx.Done():
	}
	stopCtx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if grace > 0 {
		t := time.AfterFunc(grace, func() {
			log.Warn().Int64("grace_ms", grace.Milliseconds()).Msg("grace period over: stopping running jobs")
			cancel()
		})
		defer t.Stop()
	}
	done := make(chan struct{})
	defer close(done)
	go func() {
		select {
		case s := <-sigs:
			log.Warn().Str("signal", s.String()).Msg("second signal: stopping running jobs")
			cancel()
		case <-done:
		}
	}()
	return stop(stopCtx)
}
