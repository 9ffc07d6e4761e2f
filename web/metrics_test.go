package web

import (
	"compress/gzip"
	"context"
	"net/http"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/queuectl/queuectl/queue"
	"github.com/queuectl/queuectl/queue/sqlite"
)

func TestMetricsCountTheDatabase(t *testing.T) {
	for _, sk := range stores() {
		t.Run(sk.name, func(t *testing.T) {
			h := newHarness(t, sk.open(t), adminToken, viewerToken)
			ctx := context.Background()
			h.enqueue(`{"id":"ok","command":"true","queue":"mail"}`)
			h.runJob("ok", queue.OutcomeSucceeded, "")
			h.enqueue(`{"id":"bad","command":"false","queue":"mail","max_retries":0}`)
			h.runJob("bad", queue.OutcomeFailed, "")
			h.enqueue(`{"id":"wait","command":"true","queue":"mail"}`)
			h.store.RegisterWorker(ctx, &queue.WorkerInfo{ID: "w", PID: 7, Host: "box", BootID: "b", StartedAt: h.clock.Now(), HeartbeatAt: h.clock.Now()})
			h.store.ApplyTemplates(ctx, []*queue.Template{{Name: "tick", Schedule: "* * * * *", TimeZone: "UTC", Command: "true",
				Overlap: queue.OverlapAllow, CatchUp: queue.CatchUpNone, Enabled: true}}, h.clock.Now().Add(-10*time.Minute))
			h.clock.Advance(10 * time.Second)

			h.must(req{path: "/metrics"}, http.StatusUnauthorized)
			body := h.must(req{path: "/metrics", token: viewerToken}, http.StatusOK).Body.String()
			for _, want := range []string{
				`queuectl_jobs{queue="mail",state="completed"} 1`,
				`queuectl_jobs{queue="mail",state="dead"} 1`,
				`queuectl_jobs{queue="mail",state="pending"} 1`,
				`queuectl_dlq_jobs{queue="mail"} 1`,
				`queuectl_attempts_finished_total{outcome="succeeded",queue="mail"} 1`,
				`queuectl_attempts_finished_total{outcome="failed",queue="mail"} 1`,
				`queuectl_attempt_duration_seconds_bucket{queue="mail",le="1"} 0`,
				`queuectl_attempt_duration_seconds_bucket{queue="mail",le="2.5"} 2`,
				`queuectl_attempt_duration_seconds_count{queue="mail"} 2`,
				`queuectl_job_start_delay_seconds_count{queue="mail"} 2`,
				`queuectl_oldest_pending_job_age_seconds{queue="mail"} 10`,
				`queuectl_workers_alive 1`,
				`queuectl_cron_next_fire_timestamp_seconds{template="tick"}`,
				`go_goroutines`,
			} {
				if !strings.Contains(body, want) {
					t.Errorf("metrics lack %q", want)
				}
			}
			m := regexp.MustCompile(`queuectl_cron_missed_slots\{template="tick"\} (\d+)`).FindStringSubmatch(body)
			// Slots due before now-1m since the cursor 10m10s back: 550
			// seconds hold 9 or 10 minute boundaries.
			if m == nil {
				t.Fatal("no missed slots for the template")
			}
			if n, _ := strconv.Atoi(m[1]); n < 9 || n > 10 {
				t.Errorf("missed slots of a template 10 minutes behind: %v", m)
			}
			// The figures come from the database: a second server sees them.
			other := newHarness(t, h.store, "", "")
			other.clock.Set(h.clock.Now())
			fams, err := collect(ctx, other.store, other.clock.Now())
			if err != nil {
				t.Fatal(err)
			}
			finished := -1
			for _, f := range fams {
				if f.Name == "queuectl_attempts_finished_total" {
					finished = f.Len()
				}
			}
			if finished != 2 {
				t.Errorf("another server sees %d finished series (-1: none)", finished)
			}
			// What Prometheus reads: its parser takes the whole answer,
			// plain and gzipped.
			p := expfmt.NewTextParser(model.UTF8Validation)
			parsed, err := p.TextToMetricFamilies(strings.NewReader(body))
			if err != nil {
				t.Fatalf("the Prometheus parser rejects /metrics: %v", err)
			}
			if f := parsed["queuectl_attempt_duration_seconds"]; f == nil || f.GetType() != dto.MetricType_HISTOGRAM {
				t.Errorf("queuectl_attempt_duration_seconds parsed as %v", f)
			}
			zipped := h.must(req{path: "/metrics", token: viewerToken, header: map[string]string{"Accept-Encoding": "gzip"}}, http.StatusOK)
			if enc := zipped.Header().Get("Content-Encoding"); enc != "gzip" {
				t.Fatalf("Content-Encoding %q for a client that takes gzip", enc)
			}
			zr, err := gzip.NewReader(zipped.Body)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := p.TextToMetricFamilies(zr); err != nil {
				t.Fatalf("the Prometheus parser rejects gzipped /metrics: %v", err)
			}
		})
	}
}

// Work done through one handle on the database (another process) shows in
// the metrics a server on a second handle serves.
func TestMetricsCountOtherProcessesWork(t *testing.T) {
	path := filepath.Join(t.TempDir(), "queue.db")
	open := func() queue.Store {
		st, err := sqlite.Open(context.Background(), path)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		return st
	}
	worker := newHarness(t, open(), adminToken, viewerToken)
	server := newHarness(t, open(), adminToken, viewerToken)
	before := server.must(req{path: "/metrics", token: viewerToken}, http.StatusOK).Body.String()
	if strings.Contains(before, `queuectl_jobs{`) {
		t.Fatalf("metrics of an empty database show jobs:\n%s", before)
	}
	worker.enqueue(`{"id":"a","command":"true","queue":"mail"}`)
	worker.runJob("a", queue.OutcomeSucceeded, "")
	worker.enqueue(`{"id":"b","command":"true","queue":"mail"}`)
	body := server.must(req{path: "/metrics", token: viewerToken}, http.StatusOK).Body.String()
	for _, want := range []string{
		`queuectl_jobs{queue="mail",state="completed"} 1`,
		`queuectl_jobs{queue="mail",state="pending"} 1`,
		`queuectl_attempts_finished_total{outcome="succeeded",queue="mail"} 1`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("the other handle's metrics lack %q", want)
		}
	}
}

func TestMetricsGzipOnlyWhenAccepted(t *testing.T) {
	for header, want := range map[string]bool{
		"":                        false,
		"gzip":                    true,
		"GZIP":                    true,
		"br, gzip;q=0.5":          true,
		"gzip;q=0":                false,
		"gzip; q=0.0, identity":   false,
		"deflate, identity;q=0.5": false,
		"x-gzip":                  false,
	} {
		if got := acceptsGzip(header); got != want {
			t.Errorf("acceptsGzip(%q) = %v, want %v", header, got, want)
		}
	}
}

// TestMetricsFailureKeepsItsCauseInTheLog: a scrape the database fails
// answers 500 saying only that, as the API's internal errors do; the
// cause (a driver's message, a file's path) is for the log.
func TestMetricsFailureKeepsItsCauseInTheLog(t *testing.T) {
	h := tokens(t)
	h.store.Close()
	rec := h.must(req{path: "/metrics", token: viewerToken}, http.StatusInternalServerError)
	if body := rec.Body.String(); strings.Contains(body, "closed") || !strings.Contains(body, "internal error") {
		t.Errorf("body of a failed scrape: %q", body)
	}
}

// The dead-letter gauge of a queue that holds jobs is there at 0 before
// its first dead job: the documented alert, increase(queuectl_dlq_jobs[30m])
// > 0, sees a series go from 0 to 1, where a series that first appears
// at 1 shows no increase at all.
func TestMetricsDeadLetterGaugeStartsAtZero(t *testing.T) {
	h := tokens(t)
	h.enqueue(`{"id":"bad","command":"false","queue":"mail","max_retries":0}`)
	body := h.must(req{path: "/metrics", token: viewerToken}, http.StatusOK).Body.String()
	if !strings.Contains(body, `queuectl_dlq_jobs{queue="mail"} 0`) {
		t.Errorf("no dead-letter gauge at 0 for a queue with jobs:\n%s", body)
	}
	h.runJob("bad", queue.OutcomeFailed, "")
	body = h.must(req{path: "/metrics", token: viewerToken}, http.StatusOK).Body.String()
	if !strings.Contains(body, `queuectl_dlq_jobs{queue="mail"} 1`) {
		t.Errorf("no dead-letter gauge at 1 after a dead job:\n%s", body)
	}
}
