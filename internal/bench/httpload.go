package bench

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strings"
	"sync"
	"time"
)

// The enqueue-http scenario: the enqueue-load scenario's load, with the
// enqueues sent to one `queuectl serve` process over its HTTP API instead
// of one `queuectl enqueue` process per call. Requests that arrive while
// another's jobs are being stored are stored with them in one transaction
// (queue.CoalesceInserts), so the server takes the write lock once per
// group rather than once per job.

// enqueueHTTP: LoadWorkers worker processes drain `true` jobs while
// LoadEnqueuers goroutines each POST one job at a time to /api/v1/jobs for
// LoadFor. One more goroutine asks /healthz in a loop meanwhile: a request
// the same server answers without the database, the baseline of what the
// load alone costs a request.
func (b *runner) enqueueHTTP(ctx context.Context) ([]Result, error) {
	b.progress("enqueue-http: %d workers, %d HTTP enqueuers for %s", b.cfg.LoadWorkers, b.cfg.LoadEnqueuers, b.cfg.LoadFor)
	var base string
	serve := func(dsn string) (stop func(), err error) {
		base, stop, err = b.startServe(ctx, dsn)
		return stop, err
	}
	var calls, health []float64
	var stored int
	var failures []error
	var elapsed time.Duration
	workersRate, err := b.underLoad(ctx, serve, func(string) {
		start := time.Now()
		calls, stored, failures, health = b.httpCalls(ctx, base, start.Add(b.cfg.LoadFor))
		elapsed = time.Since(start)
	})
	if err != nil {
		return nil, err
	}
	if len(calls) == 0 || len(health) == 0 {
		return nil, fmt.Errorf("no request finished in %s (%d failed: %v)", b.cfg.LoadFor, len(failures), first(failures))
	}
	sort.Float64s(calls)
	sort.Float64s(health)
	load := fmt.Sprintf("%d worker processes on true jobs, %d concurrent HTTP enqueuers", b.cfg.LoadWorkers, b.cfg.LoadEnqueuers)
	vs := "GET /healthz under the same load"
	p99 := result("enqueue-http", "one POST /api/v1/jobs p99, "+load, "ms", []float64{percentile(calls, 0.99)}, "target", targetLoadP99, "lower")
	p99.Note = fmt.Sprintf("%d requests; %s p99 %.1f ms", len(calls), vs, percentile(health, 0.99))
	out := []Result{
		result("enqueue-http", "baseline: GET /healthz p50 under the same load", "ms", []float64{percentile(health, 0.5)}, "", 0, "lower"),
		result("enqueue-http", "baseline: GET /healthz p99 under the same load", "ms", []float64{percentile(health, 0.99)}, "", 0, "lower"),
		result("enqueue-http", "one POST /api/v1/jobs p50, "+load, "ms", []float64{percentile(calls, 0.5)}, vs+" (p50)", percentile(health, 0.5), "lower"),
		p99,
		result("enqueue-http", "one POST /api/v1/jobs max, "+load, "ms", []float64{last(calls)}, vs+" (max)", last(health), "lower"),
		result("enqueue-http", "jobs enqueued over HTTP", "jobs/s", []float64{float64(stored) / elapsed.Seconds()}, "", 0, "higher"),
		result("enqueue-http", "jobs the workers completed meanwhile", "jobs/s", []float64{workersRate}, "", 0, "higher"),
		result("enqueue-http", "requests that failed, POST or GET", "requests", []float64{float64(len(failures))}, "", 0, "lower"),
	}
	if len(failures) > 0 {
		out[len(out)-1].Note = "first: " + first(failures).Error()
	}
	return out, nil
}

// startServe starts `queuectl serve` on a free loopback port, in a session
// of its own like the workers, and returns its base URL once it serves.
func (b *runner) startServe(ctx context.Context, dsn string) (string, func(), error) {
	cmd := b.cli(ctx, dsn, "--log-format", "json", "serve", "--listen", "127.0.0.1:0")
	ownSession(cmd)
	logs, err := cmd.StderrPipe()
	if err != nil {
		return "", nil, err
	}
	if err := cmd.Start(); err != nil {
		return "", nil, fmt.Errorf("start queuectl serve: %w", err)
	}
	stop := func() {
		cmd.Process.Kill()
		cmd.Wait()
	}
	found := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(logs)
		for sc.Scan() {
			var l struct {
				Message string `json:"message"`
				URL     string `json:"url"`
			}
			if json.Unmarshal(sc.Bytes(), &l) == nil && l.Message == "serving http" {
				found <- l.URL
				break
			}
		}
		close(found)
		io.Copy(io.Discard, logs)
	}()
	select {
	case u, ok := <-found:
		if !ok {
			stop()
			return "", nil, fmt.Errorf("queuectl serve ended before it served")
		}
		return u, stop, nil
	case <-time.After(30 * time.Second):
		stop()
		return "", nil, fmt.Errorf("queuectl serve did not serve within 30s")
	}
}

// httpCalls runs the HTTP enqueuers and the /healthz loop until deadline
// and returns the enqueue requests' and the health checks' wall times in
// ms, and how many enqueue requests stored their job.
func (b *runner) httpCalls(ctx context.Context, base string, deadline time.Time) (calls []float64, stored int, failures []error, health []float64) {
	client := &http.Client{Timeout: time.Minute, Transport: &http.Transport{MaxIdleConnsPerHost: b.cfg.LoadEnqueuers + 1}}
	defer client.CloseIdleConnections()
	do := func(method, path, body string) error {
		req, err := http.NewRequestWithContext(ctx, method, base+path, strings.NewReader(body))
		if err != nil {
			return err
		}
		req.Header.Set("Content-Type", "application/json")
		resp, err := client.Do(req)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		msg, _ := io.ReadAll(resp.Body)
		if resp.StatusCode/100 != 2 {
			return fmt.Errorf("%s %s: %s: %s", method, path, resp.Status, strings.TrimSpace(string(msg)))
		}
		return nil
	}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for range b.cfg.LoadEnqueuers {
		wg.Go(func() {
			for time.Now().Before(deadline) && ctx.Err() == nil {
				t := time.Now()
				err := do("POST", "/api/v1/jobs", `{"command":"true"}`)
				ms := float64(time.Since(t).Microseconds()) / 1000
				mu.Lock()
				calls = append(calls, ms) // a failed request was waited for too
				if err != nil {
					failures = append(failures, err)
				} else {
					stored++
				}
				mu.Unlock()
			}
		})
	}
	wg.Go(func() {
		for time.Now().Before(deadline) && ctx.Err() == nil {
			t := time.Now()
			err := do("GET", "/healthz", "")
			ms := float64(time.Since(t).Microseconds()) / 1000
			mu.Lock()
			if err != nil {
				failures = append(failures, err)
			} else {
				health = append(health, ms)
			}
			mu.Unlock()
		}
	})
	wg.Wait()
	return calls, stored, failures, health
}
