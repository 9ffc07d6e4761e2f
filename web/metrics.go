package web

import (
	"context"
	"math"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/queuectl/queuectl/internal/view"
	"github.com/queuectl/queuectl/queue"
)

// bucketBounds are the histogram bounds in seconds; the stores' totals
// tables use the same ones (in microseconds), plus the unbounded bucket.
var bucketBounds = []float64{0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1800, 3600}

// workerAlive is how recent a heartbeat must be for a worker to count as
// alive: the default lease, which a live worker renews three times over.
const workerAlive = 30 * time.Second

func desc(name, help string, labels ...string) *prometheus.Desc {
	return prometheus.NewDesc("queuectl_"+name, help, labels, nil)
}

var (
	descJobs          = desc("jobs", "Jobs by queue and state.", "queue", "state")
	descDLQ           = desc("dlq_jobs", "Dead jobs (the dead-letter queue) by queue.", "queue")
	descFinished      = desc("attempts_finished_total", "Attempts finished, by queue and outcome.", "queue", "outcome")
	descRunTime       = desc("attempt_duration_seconds", "Run time of finished attempts, by queue.", "queue")
	descStartDelay    = desc("job_start_delay_seconds", "Delay from a job's run_at to the start of its attempt, by queue.", "queue")
	descOldest        = desc("oldest_pending_job_age_seconds", "How long each queue's oldest due pending job has waited.", "queue")
	descWorkers       = desc("workers_alive", "Registered workers whose heartbeat is under 30s old.")
	descWorkersBusy   = desc("jobs_running", "Jobs held by live workers.")
	descCronNext      = desc("cron_next_fire_timestamp_seconds", "Next fire time of each enabled recurring job.", "template")
	descCronLast      = desc("cron_last_fire_timestamp_seconds", "Slot of the newest job each recurring job fired.", "template")
	descCronMissed    = desc("cron_missed_slots", "Slots due over a minute ago that no scheduler has handled.", "template")
	descScrapeSeconds = desc("metrics_scrape_duration_seconds", "Time the database reads of this scrape took.")
)

// collector reads the figures at scrape time with a bounded number of cheap
// queries, so they are right however many processes and hosts work the
// queue.
type collector struct {
	store queue.Store
	now   func() time.Time
	fail  func(error)
}

func (c *collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descJobs, descDLQ, descFinished, descRunTime, descStartDelay, descOldest,
		descWorkers, descWorkersBusy, descCronNext, descCronLast, descCronMissed, descScrapeSeconds} {
		ch <- d
	}
}

func (c *collector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	start := time.Now()
	if err := c.collect(ctx, ch); err != nil {
		c.fail(err)
		ch <- prometheus.NewInvalidMetric(descJobs, err)
		return
	}
	ch <- prometheus.MustNewConstMetric(descScrapeSeconds, prometheus.GaugeValue, time.Since(start).Seconds())
}

func (c *collector) collect(ctx context.Context, ch chan<- prometheus.Metric) error {
	now := c.now()
	counts, err := c.store.CountJobs(ctx)
	if err != nil {
		return err
	}
	dead := map[string]int{}
	for _, n := range counts {
		ch <- prometheus.MustNewConstMetric(descJobs, prometheus.GaugeValue, float64(n.N), n.Queue, string(n.State))
		if n.State == queue.StateDead {
			dead[n.Queue] += n.N
		}
	}
	for q, n := range dead {
		ch <- prometheus.MustNewConstMetric(descDLQ, prometheus.GaugeValue, float64(n), q)
	}
	m, err := c.store.Metrics(ctx, now)
	if err != nil {
		return err
	}
	finished := map[[2]string]int64{}
	for _, t := range m.RunTimes {
		finished[[2]string{t.Queue, string(t.Outcome)}] += t.N
	}
	for k, n := range finished {
		ch <- prometheus.MustNewConstMetric(descFinished, prometheus.CounterValue, float64(n), k[0], k[1])
	}
	histograms(ch, descRunTime, m.RunTimes)
	histograms(ch, descStartDelay, m.StartDelays)
	for q, at := range m.OldestPending {
		ch <- prometheus.MustNewConstMetric(descOldest, prometheus.GaugeValue, math.Max(0, now.Sub(at).Seconds()), q)
	}
	ws, err := c.store.ListWorkers(ctx)
	if err != nil {
		return err
	}
	alive, running := 0, 0
	for _, w := range ws {
		if now.Sub(w.HeartbeatAt) < workerAlive {
			alive++
			running += len(w.CurrentJobs)
		}
	}
	ch <- prometheus.MustNewConstMetric(descWorkers, prometheus.GaugeValue, float64(alive))
	ch <- prometheus.MustNewConstMetric(descWorkersBusy, prometheus.GaugeValue, float64(running))
	ts, err := c.store.Templates(ctx)
	if err != nil {
		return err
	}
	for _, t := range view.CronTemplates(ts, now, 1) {
		if len(t.NextFires) > 0 {
			ch <- prometheus.MustNewConstMetric(descCronNext, prometheus.GaugeValue, float64(t.NextFires[0].Unix()), t.Name)
		}
		if t.LastFire != nil {
			ch <- prometheus.MustNewConstMetric(descCronLast, prometheus.GaugeValue, float64(t.LastFire.Unix()), t.Name)
		}
		ch <- prometheus.MustNewConstMetric(descCronMissed, prometheus.GaugeValue, float64(t.MissedSlots), t.Name)
	}
	return nil
}

// histograms turns a store's bucket totals into one histogram per queue.
func histograms(ch chan<- prometheus.Metric, d *prometheus.Desc, totals []queue.MetricTotal) {
	type hist struct {
		count   uint64
		sum     float64
		buckets map[float64]uint64
	}
	byQueue := map[string]*hist{}
	for _, t := range totals {
		h := byQueue[t.Queue]
		if h == nil {
			h = &hist{buckets: make(map[float64]uint64, len(bucketBounds))}
			byQueue[t.Queue] = h
		}
		h.count += uint64(t.N)
		h.sum += t.Sum.Seconds()
		le := t.LE.Seconds()
		for _, b := range bucketBounds {
			if le <= b {
				h.buckets[b] += uint64(t.N) // cumulative: every bound at or above the row's
			}
		}
	}
	for q, h := range byQueue {
		for _, b := range bucketBounds {
			h.buckets[b] += 0
		}
		ch <- prometheus.MustNewConstHistogram(d, h.count, h.sum, h.buckets, q)
	}
}

// metricsHandler serves /metrics from a registry of its own: the queue's
// figures, and the Go runtime's and process's of this server.
func (s *Server) metricsHandler() http.Handler {
	reg := prometheus.NewRegistry()
	reg.MustRegister(&collector{store: s.cfg.Store, now: s.now, fail: func(err error) {
		s.cfg.Log.Error().Err(err).Msg("metrics scrape failed")
	}})
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return promhttp.HandlerFor(reg, promhttp.HandlerOpts{Timeout: 20 * time.Second, MaxRequestsInFlight: 2})
}
