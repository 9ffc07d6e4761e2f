package postgres_test

import (
	"testing"

	"github.com/queuectl/queuectl/queue"
	"github.com/queuectl/queuectl/queue/storetest"
)

// BenchmarkEngineNoop measures claim+complete cycles of the real engine
// loop on PostgreSQL ($TEST_DATABASE_URL, a schema per run) with a runner
// that does nothing: the figure of queuectl bench's engine scenario, under
// go test's profilers.
func BenchmarkEngineNoop(b *testing.B) {
	storetest.BenchEngineNoop(b, func(b *testing.B) queue.Store {
		_, u := newSchema(b)
		return open(b, u)
	})
}
