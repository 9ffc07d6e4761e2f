package queue_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/queuectl/queuectl/queue"
	"github.com/queuectl/queuectl/queue/sqlite"
	"github.com/queuectl/queuectl/queue/storetest"
)

// BenchmarkEngineNoop measures claim+complete cycles of the real engine
// loop on SQLite with a runner that does nothing (storetest.BenchEngineNoop;
// queue/postgres runs the same on PostgreSQL). queuectl bench reports the
// same figure as jobs/s.
func BenchmarkEngineNoop(b *testing.B) {
	storetest.BenchEngineNoop(b, func(b *testing.B) queue.Store {
		st, err := sqlite.Open(context.Background(), filepath.Join(b.TempDir(), "queue.db"))
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { st.Close() })
		return st
	})
}
