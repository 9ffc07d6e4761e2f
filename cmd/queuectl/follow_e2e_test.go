package main

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestE2EFollowOutputOverHTTP: `serve` streams a job's output live to a
// viewer with ?follow=1 while a worker, another process, runs it, and
// ends the answer when the attempt ends.
func TestE2EFollowOutputOverHTTP(t *testing.T) {
	c := newCLI(t)
	gate := filepath.Join(c.home, "go-on")
	c.ok("enqueue", "--id", "live", "--command", "echo first; while [ ! -f "+gate+" ]; do sleep 0.05; done; echo second")
	s := startServe(t, c, []string{"QUEUECTL_HTTP_VIEWER_TOKEN=viewer-token"}, "--listen", "127.0.0.1:0")
	c.ok("worker", "start")
	c.waitState("live", "processing", 20*time.Second)

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, s.url+"/api/v1/jobs/live/output?follow=1", nil)
	req.Header.Set("Authorization", "Bearer viewer-token")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		t.Fatalf("status %d", res.StatusCode)
	}
	body := bufio.NewReader(res.Body)
	if line, err := body.ReadString('\n'); line != "first\n" {
		t.Fatalf("first line %q (%v), want the running attempt's output so far", line, err)
	}
	// The job goes on only once the follower saw its first line.
	if err := os.WriteFile(gate, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	rest, err := io.ReadAll(body)
	if err != nil || string(rest) != "second\n" {
		t.Fatalf("rest %q (%v), want the attempt's last line, then the end", rest, err)
	}
	if j := c.job("live"); j.State != "completed" {
		t.Fatalf("job %+v", j)
	}
}
