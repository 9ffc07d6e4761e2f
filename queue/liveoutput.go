package queue

import (
	"context"
	"time"

	"github.com/rs/zerolog"
)

// liveSaver saves a running attempt's output so far to the store every
// EngineConfig.LiveOutput while it changes, so that any process can follow
// the attempt (the dashboard, `GET /api/v1/jobs/{id}/events`). An attempt
// that ends within the first interval writes nothing.
type liveSaver struct {
	store  Store
	live   LiveOutput
	every  time.Duration
	clock  Clock
	log    zerolog.Logger
	stopc  chan struct{}
	done   chan struct{}
	active bool
}

func (e *Engine) newLiveSaver(j *Job, log zerolog.Logger) *liveSaver {
	return &liveSaver{
		store: e.store, every: e.cfg.LiveOutput, clock: e.cfg.Clock, log: log,
		live:  LiveOutput{JobID: j.ID, Worker: e.me.ID, Attempt: j.Attempts},
		stopc: make(chan struct{}), done: make(chan struct{}),
	}
}

// watch is RunSpec.Live: the runner calls it once, before Run returns.
func (l *liveSaver) watch(read func() ([]byte, int64)) {
	l.active = true
	go l.loop(read)
}

func (l *liveSaver) loop(read func() ([]byte, int64)) {
	defer close(l.done)
	t := time.NewTicker(l.every)
	defer t.Stop()
	var saved int64
	failing := false
	for {
		select {
		case <-l.stopc:
			return
		case <-t.C:
		}
		out, written := read()
		if written == saved {
			continue
		}
		l.live.Output, l.live.Written, l.live.UpdatedAt = LiveTail(out), written, l.clock.Now()
		ctx, cancel := context.WithTimeout(context.Background(), l.every*5)
		err := l.store.SaveLiveOutput(ctx, l.live)
		cancel()
		switch {
		case err == nil:
			saved, failing = written, false
		case !failing:
			// Only a view of work in progress: the attempt goes on, and its
			// whole output is recorded when it ends.
			l.log.Warn().Err(err).Msg("save live output failed")
			failing = true
		}
	}
}

// stop ends the saving and waits for a save in flight; call it after Run
// returned.
func (l *liveSaver) stop() {
	close(l.stopc)
	if l.active {
		<-l.done
	}
}
