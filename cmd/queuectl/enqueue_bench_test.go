package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
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
