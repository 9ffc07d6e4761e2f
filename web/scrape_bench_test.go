package web

import (
	"context"
	"database/sql"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"

	_ "github.com/mattn/go-sqlite3"
	"github.com/queuectl/queuectl/queue/sqlite"
	"github.com/rs/zerolog"
)

// BenchmarkScrapeMillionJobs measures one /metrics scrape on a SQLite
// database of 1,000,000 jobs in 8 queues and every state (docs/http.md
// reports the figure). Run it with
//
//	go test -run '^$' -bench ScrapeMillionJobs -benchtime 20x ./web
func BenchmarkScrapeMillionJobs(b *testing.B) {
	path := filepath.Join(b.TempDir(), "queue.db")
	if p := os.Getenv("QUEUECTL_SCRAPE_DB"); p != "" {
		path = p
	}
	st, err := sqlite.Open(context.Background(), path)
	if err != nil {
		b.Fatal(err)
	}
	st.Close()
	db, err := sql.Open("sqlite3", path)
	if err != nil {
		b.Fatal(err)
	}
	now := time.Now().UnixMicro()
	// 1,000,000 jobs: state by i % 20 (mostly completed, as on a busy
	// queue), queue by i % 8, run_at spread over the last day.
	_, err = db.Exec(`WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i < 999999)
		INSERT INTO jobs (id, queue, command, state, max_retries, backoff_base, max_backoff_us, run_at, created_at, updated_at)
		SELECT printf('job-%07d', i), 'queue-' || (i % 8), 'echo ' || i,
			CASE WHEN i % 20 < 14 THEN 'completed' WHEN i % 20 < 17 THEN 'pending' WHEN i % 20 = 17 THEN 'failed'
				WHEN i % 20 = 18 THEN 'dead' ELSE 'cancelled' END,
			3, 2, 3600000000, ?1 - (i * 86400), ?1 - (i * 86400), ?1 - (i * 86400)
		FROM n`, now)
	if err != nil {
		b.Fatal(err)
	}
	// The store's transactions keep the counters; a raw insert counts its own.
	_, err = db.Exec(`INSERT INTO counters (queue, kind, key, le_us, n, sum_us)
		SELECT queue, 'jobs', state, 0, count(*), 0 FROM jobs GROUP BY 1, 3`)
	if err != nil {
		b.Fatal(err)
	}
	db.Close()
	st, err = sqlite.Open(context.Background(), path)
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	srv, err := New(Config{Store: st, Log: zerolog.Nop()})
	if err != nil {
		b.Fatal(err)
	}
	h := srv.Handler()
	b.ResetTimer()
	for range b.N {
		rec := httptest.NewRecorder()
		req := httptest.NewRequest("GET", "/metrics", nil)
		req.Host = "127.0.0.1"
		h.ServeHTTP(rec, req)
		if rec.Code != http.StatusOK {
			b.Fatalf("scrape: %d %s", rec.Code, rec.Body.String())
		}
	}
}
