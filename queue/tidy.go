package queue

import (
	"context"
	"time"

	"github.com/rs/zerolog"
)

// tidier asks a store that keeps its own tables in shape (Tidier) to do so
// every so often, for as long as the engine runs.
type tidier struct {
	store Tidier
	every time.Duration
	log   zerolog.Logger
	svc   service
}

// Start tidies after one interval and then every interval. It is safe to
// call twice.
func (t *tidier) Start() { t.svc.start(t.loop) }

// Stop stops tidying and waits for a round in flight (whose statements the
// store cancels). It is safe to call twice.
func (t *tidier) Stop() { t.svc.stop() }

func (t *tidier) loop(ctx context.Context) {
	repeat(ctx, t.every, nil, func(ctx context.Context) time.Duration {
		start := time.Now()
		done, err := t.store.Tidy(ctx)
		switch {
		case err != nil && ctx.Err() == nil:
			t.log.Warn().Err(err).Strs("done", done).Msg("tidy tables")
		case len(done) > 0:
			t.log.Info().Strs("done", done).Int64("duration_ms", time.Since(start).Milliseconds()).Msg("tidied tables")
		}
		return t.every
	})
}
