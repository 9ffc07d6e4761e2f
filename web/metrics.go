package web

import (
	"compress/gzip"
	"context"
	"io"
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/queuectl/queuectl/internal/promtext"
	"github.com/queuectl/queuectl/internal/supervise"
	"github.com/queuectl/queuectl/internal/view"
	"github.com/queuectl/queuectl/queue"
)

// bucketBounds are the histogram bounds in seconds; the stores' totals
// tables use the same ones (in microseconds), plus the unbounded bucket.
var bucketBounds = []float64{0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1800, 3600}

// Limits of one scrape: how long its database reads may take (then it
// fails with 500), and how many scrapes run at once (more get 503).
const (
	scrapeTimeout  = 10 * time.Second
	scrapesAtOnce  = 2
	metricsContent = "text/plain; version=0.0.4; charset=utf-8"
)

func family(name, help string, typ promtext.Type, labels ...string) *promtext.Family {
	return promtext.NewFamily("queuectl_"+name, help, typ, labels...)
}

// collect reads the queue's figures with a bounded number of cheap queries,
// so they are right however many processes and hosts work the queue.
func collect(ctx context.Context, store queue.Store, now time.Time) ([]*promtext.Family, error) {
	start := time.Now()
	jobs := family("jobs", "Jobs by queue and state.", promtext.Gauge, "queue", "state")
	dlq := family("dlq_jobs", "Dead jobs (the dead-letter queue) by queue.", promtext.Gauge, "queue")
	counts, err := store.CountJobs(ctx)
	if err != nil {
		return nil, err
	}
	// Every queue that holds jobs has a dead-letter gauge, at 0 too: a
	// series that first appears at 1 shows no increase() to alert on.
	dead := map[string]int{}
	for _, n := range counts {
		jobs.Add(float64(n.N), n.Queue, string(n.State))
		dead[n.Queue] += 0
		if n.State == queue.StateDead {
			dead[n.Queue] += n.N
		}
	}
	for q, n := range dead {
		dlq.Add(float64(n), q)
	}

	m, err := store.Metrics(ctx, now)
	if err != nil {
		return nil, err
	}
	finished := family("attempts_finished_total", "Attempts finished, by queue and outcome.", promtext.Counter, "queue", "outcome")
	byOutcome := map[[2]string]int64{}
	for _, t := range m.RunTimes {
		byOutcome[[2]string{t.Queue, string(t.Outcome)}] += t.N
	}
	for k, n := range byOutcome {
		finished.Add(float64(n), k[0], k[1])
	}
	runTime := histograms(family("attempt_duration_seconds", "Run time of finished attempts, by queue.", promtext.Histogram, "queue"), m.RunTimes)
	startDelay := histograms(family("job_start_delay_seconds", "Delay from a job's run_at to the start of its attempt, by queue.", promtext.Histogram, "queue"), m.StartDelays)
	oldest := family("oldest_pending_job_age_seconds", "How long each queue's oldest due pending job has waited.", promtext.Gauge, "queue")
	for q, at := range m.OldestPending {
		oldest.Add(math.Max(0, now.Sub(at).Seconds()), q)
	}

	ws, err := store.ListWorkers(ctx)
	if err != nil {
		return nil, err
	}
	heard, err := supervise.HeartbeatNow(ctx, store, now)
	if err != nil {
		return nil, err
	}
	alive, running := 0, 0
	for _, w := range ws {
		if view.Heard(w, heard) {
			alive++
			running += len(w.CurrentJobs)
		}
	}
	workers := family("workers_alive", "Registered workers whose heartbeat is under 30s old.", promtext.Gauge)
	workers.Add(float64(alive))
	busy := family("jobs_running", "Jobs held by live workers.", promtext.Gauge)
	busy.Add(float64(running))

	ts, err := store.Templates(ctx)
	if err != nil {
		return nil, err
	}
	cronNext := family("cron_next_fire_timestamp_seconds", "Next fire time of each enabled recurring job.", promtext.Gauge, "template")
	cronLast := family("cron_last_fire_timestamp_seconds", "Slot of the newest job each recurring job fired.", promtext.Gauge, "template")
	cronMissed := family("cron_missed_slots", "Slots due over a minute ago that no scheduler has handled.", promtext.Gauge, "template")
	for _, t := range view.CronTemplates(ts, now, 1) {
		if len(t.NextFires) > 0 {
			cronNext.Add(float64(t.NextFires[0].Unix()), t.Name)
		}
		if t.LastFire != nil {
			cronLast.Add(float64(t.LastFire.Unix()), t.Name)
		}
		cronMissed.Add(float64(t.MissedSlots), t.Name)
	}
	took := family("metrics_scrape_duration_seconds", "Time the database reads of this scrape took.", promtext.Gauge)
	took.Add(time.Since(start).Seconds())
	return []*promtext.Family{jobs, dlq, finished, runTime, startDelay, oldest, workers, busy,
		cronNext, cronLast, cronMissed, took}, nil
}

// histograms adds to f one histogram per queue from a store's bucket totals.
func histograms(f *promtext.Family, totals []queue.MetricTotal) *promtext.Family {
	type hist struct {
		count   uint64
		sum     float64
		buckets []uint64 // cumulative, one per bucketBounds entry
	}
	byQueue := map[string]*hist{}
	for _, t := range totals {
		h := byQueue[t.Queue]
		if h == nil {
			h = &hist{buckets: make([]uint64, len(bucketBounds))}
			byQueue[t.Queue] = h
		}
		h.count += uint64(t.N)
		h.sum += t.Sum.Seconds()
		le := t.LE.Seconds()
		for i, b := range bucketBounds {
			if le <= b {
				h.buckets[i] += uint64(t.N) // cumulative: every bound at or above the row's
			}
		}
	}
	for q, h := range byQueue {
		f.AddHistogram(bucketBounds, h.buckets, h.count, h.sum, q)
	}
	return f
}

// metricsHandler serves /metrics in the Prometheus text format: the queue's
// figures, read from the database at each scrape, and the Go runtime's and
// this server process's own.
func (s *Server) metricsHandler() http.Handler {
	slots := make(chan struct{}, scrapesAtOnce)
	procs := promtext.NewProcessReader()
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Vary", "Accept-Encoding")
		select {
		case slots <- struct{}{}:
			defer func() { <-slots }()
		default:
			http.Error(w, "too many scrapes at once", http.StatusServiceUnavailable)
			return
		}
		ctx, cancel := context.WithTimeout(r.Context(), scrapeTimeout)
		defer cancel()
		fams, err := collect(ctx, s.cfg.Store, s.now())
		var body []byte
		if err == nil {
			fams = append(fams, promtext.GoRuntime()...)
			body, err = promtext.Encode(append(fams, procs.Self()...))
		}
		if err != nil {
			// As the API's internal errors: the cause is for the log.
			s.cfg.Log.Error().Err(err).Msg("metrics scrape failed")
			http.Error(w, "metrics: internal error", http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", metricsContent)
		var out io.Writer = w
		var zw *gzip.Writer
		if acceptsGzip(r.Header.Get("Accept-Encoding")) {
			w.Header().Set("Content-Encoding", "gzip")
			zw = gzip.NewWriter(w)
			out = zw
		}
		_, err = out.Write(body)
		if zw != nil && err == nil {
			err = zw.Close()
		}
		if err != nil {
			s.cfg.Log.Debug().Err(err).Msg("metrics answer not sent whole")
		}
	})
}

// acceptsGzip reports whether an Accept-Encoding header takes gzip: named
// (in any case) with a quality above zero.
func acceptsGzip(header string) bool {
	for _, part := range strings.Split(header, ",") {
		enc, params, _ := strings.Cut(part, ";")
		if !strings.EqualFold(strings.TrimSpace(enc), "gzip") {
			continue
		}
		for _, p := range strings.Split(params, ";") {
			if k, v, ok := strings.Cut(strings.TrimSpace(p), "="); ok && strings.EqualFold(k, "q") {
				if q, err := strconv.ParseFloat(strings.TrimSpace(v), 64); err == nil && q <= 0 {
					return false
				}
			}
		}
		return true
	}
	return false
}
