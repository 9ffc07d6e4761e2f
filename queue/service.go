package queue

import (
	"context"
	"sync"
	"time"
)

// service is the start/stop plumbing shared by the engine's background
// parts: start runs the part's loop in a goroutine with a context of its
// own, stop cancels that context and waits for the loop to return. Both are
// safe to call twice and from several goroutines; a stop before any start
// keeps the part from ever starting.
type service struct {
	mu      sync.Mutex
	started bool
	stopped bool
	cancel  context.CancelFunc
	done    chan struct{}
}

// start runs loop in a goroutine unless the service has started or stopped
// already, and reports whether it did.
func (s *service) start(loop func(ctx context.Context)) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.started || s.stopped {
		return false
	}
	s.started = true
	ctx, cancel := context.WithCancel(context.Background())
	s.cancel, s.done = cancel, make(chan struct{})
	go func() {
		defer close(s.done)
		loop(ctx)
	}()
	return true
}

// stop cancels the loop's context and waits until the loop has returned.
func (s *service) stop() {
	s.mu.Lock()
	s.stopped = true
	cancel, done := s.cancel, s.done
	s.mu.Unlock()
	if cancel == nil {
		return
	}
	cancel()
	<-done
}

// repeat calls fn after first, then whenever the wait fn returns has passed
// or wake delivers, until ctx ends. A nil wake never delivers.
func repeat(ctx context.Context, first time.Duration, wake <-chan struct{}, fn func(ctx context.Context) time.Duration) {
	t := time.NewTimer(first)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-wake:
		}
		resetTimer(t, fn(ctx))
	}
}

// resetTimer makes t fire after d, dropping a tick it may hold.
func resetTimer(t *time.Timer, d time.Duration) {
	t.Stop()
	select {
	case <-t.C:
	default:
	}
	t.Reset(d)
}

// poke wakes whoever waits on c, without blocking when a wake-up is pending.
func poke(c chan struct{}) {
	select {
	case c <- struct{}{}:
	default:
	}
}
