package main

import (
	"bufio"
	"context"
	"fmt"
	"github.com/queuectl/queuectl/queue"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// BenchmarkEnqueueFile measures `queuectl enqueue --file` in-process: JSON
// Lines parsing, validation and one durable transaction, per job.
func BenchmarkEnqueueFile(b *testing.B) {
	dir := b.TempDir()
	path := filepath.Join(dir, "jobs.jsonl")
	var sb strings.Builder
	for i := range b.N {
		fmt.Fprintf(&sb, `{"id":"e%d","command":"true","queue":"bench","priority":%d}`+"\n", i, i%10)
	}
	if err := os.WriteFile(path, []byte(sb.String()), 0o644); err != nil {
		b.Fatal(err)
	}
	db := filepath.Join(dir, "queue.db")
	getenv := func(k string) string {
		if k == "QUEUECTL_HOME" {
			return dir
		}
		return ""
	}
	if code := runWith(context.Background(), []string{"--db", db, "migrate"}, getenv); code != 0 {
		b.Fatal("migrate failed")
	}
	b.ResetTimer()
	if code := runWith(context.Background(), []string{"--db", db, "enqueue", "--file", path}, getenv); code != 0 {
		b.Fatal("enqueue failed")
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "jobs/s")
}

func runWith(ctx context.Context, args []string, getenv func(string) string) int {
	a := newApp(strings.NewReader(""), io.Discard, io.Discard, getenv)
	root := a.rootCmd()
	root.SetArgs(args)
	if err := root.ExecuteContext(ctx); err != nil {
		return exitCode(err)
	}
	return 0
}

// peakHeap runs fn and returns the most heap in use seen while it ran,
// sampled every few milliseconds.
func peakHeap(fn func()) uint64 {
	var peak atomic.Uint64
	done := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		tick := time.NewTicker(5 * time.Millisecond)
		defer tick.Stop()
		for {
			var m runtime.MemStats
			runtime.ReadMemStats(&m)
			if m.HeapInuse > peak.Load() {
				peak.Store(m.HeapInuse)
			}
			select {
			case <-done:
				return
			case <-tick.C:
			}
		}
	}()
	fn()
	close(done)
	<-sampled
	return peak.Load()
}

// enqueueFileIn enqueues n generated jobs with `enqueue --file` in-process
// into a new database (a SQLite file, or a new schema of the PostgreSQL
// test server when pg), and returns the peak heap in use meanwhile.
func enqueueFileIn(t *testing.T, n int, pg bool) uint64 {
	t.Helper()
	dir := t.TempDir()
	path := filepath.Join(dir, "jobs.jsonl")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	w := bufio.NewWriter(f)
	for i := range n {
		fmt.Fprintf(w, `{"id":"e%d","command":"echo job %d","queue":"bench","priority":%d}`+"\n", i, i, i%10)
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	f.Close()
	getenv := func(k string) string {
		if k == "QUEUECTL_HOME" {
			return dir
		}
		return ""
	}
	db := filepath.Join(dir, "queue.db")
	if pg {
		_, db = newPGSchema(t)
	}
	if code := runWith(context.Background(), []string{"--db", db, "migrate"}, getenv); code != 0 {
		t.Fatal("migrate failed")
	}
	runtime.GC()
	var code int
	peak := peakHeap(func() {
		code = runWith(context.Background(), []string{"--db", db, "enqueue", "--file", path}, getenv)
	})
	if code != 0 {
		t.Fatalf("enqueue --file of %d jobs: exit %d", n, code)
	}
	return peak
}

// The heap an import needs does not grow with the file: a file of four
// times the jobs (eight chunks of queue.ImportChunk against two) peaks at
// about the same heap, on SQLite (two passes, one chunk in memory) and on
// PostgreSQL (one pass; a chunk is copied while the next is read, so two
// chunks are in memory once the file has two). Reading the whole file into
// memory, as enqueue once did, needs about 500 bytes per job more: some
// 30 MB more for the larger file here.
func TestEnqueueFileMemoryIsBounded(t *testing.T) {
	const small, large = 2 * queue.ImportChunk, 8 * queue.ImportChunk
	for _, store := range []string{"sqlite", "postgres"} {
		t.Run(store, func(t *testing.T) {
			smallPeak := enqueueFileIn(t, small, store == "postgres")
			largePeak := enqueueFileIn(t, large, store == "postgres")
			t.Logf("peak heap in use: %d jobs %.1f MB, %d jobs %.1f MB", small, float64(smallPeak)/1e6, large, float64(largePeak)/1e6)
			if largePeak > smallPeak+16<<20 {
				t.Fatalf("peak heap grew from %.1f MB to %.1f MB for four times the jobs; it should stay bounded",
					float64(smallPeak)/1e6, float64(largePeak)/1e6)
			}
		})
	}
}
