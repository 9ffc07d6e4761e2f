package main

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/queuectl/queuectl/internal/supervise"
	"github.com/queuectl/queuectl/queue"
	"github.com/queuectl/queuectl/queue/postgres"
	"github.com/queuectl/queuectl/queue/sqlite"
	"github.com/spf13/cobra"
)

// migrateTo copies this database's jobs (with history and output),
// settings, queues and recurring jobs into an empty PostgreSQL database.
func (a *app) migrateTo(cmd *cobra.Command, to string) error {
	ctx := cmd.Context()
	if !isPostgresURL(to) {
		return usagef("migrate --to %q: give a postgres:// URL", redactDSN(to))
	}
	// A URL the driver cannot read is bad input, found before the source
	// is read whole.
	if err := checkDSN("migrate --to", to); err != nil {
		return err
	}
	dsn, err := a.dsn()
	if err != nil {
		return err
	}
	if dsn == to {
		return usagef("migrate --to: the target is the database in use")
	}
	// The source is only read: a mistyped path is not created and copied
	// as an empty database.
	src, err := a.openStore(cmd, sqlite.Options{MustExist: true})
	if err != nil {
		return err
	}
	defer src.Close()
	if err := a.refuseLiveWorkers(ctx, src); err != nil {
		return err
	}
	recs, attempts, err := readAllJobs(ctx, src)
	var running *runningJobError
	if errors.As(err, &running) {
		return a.explainRunning(ctx, src, running)
	}
	if err != nil {
		return err
	}
	dst, err := postgres.Open(ctx, to)
	if err != nil {
		return err
	}
	defer dst.Close()
	counts, err := dst.CountJobs(ctx)
	if err != nil {
		return err
	}
	if n := countAll(counts); n > 0 {
		return fmt.Errorf("migrate: %s already holds %d job(s); copy into an empty database", redactDSN(to), n)
	}
	// The pauses, limits and settings go first: workers may already wait
	// on the target, and would run the jobs of a paused queue, or past a
	// queue's limits, until they were stored.
	settings, queues, templates, err := copySetup(ctx, src, dst, a.now())
	if err != nil {
		return err
	}
	if err := dst.ImportJobs(ctx, recs); err != nil {
		return err
	}
	_, err = fmt.Fprintf(a.stdout, "copied %d job(s) with %d attempt(s), %d setting(s), %d queue(s) and %d recurring job(s) to %s\n",
		len(recs), attempts, settings, queues, templates, redactDSN(to))
	return err
}

// refuseLiveWorkers stops the copy while a worker or service still runs
// on the source, busy or idle: it would go on claiming the copied pending
// jobs (and firing the copied recurring jobs) there, so that they also run
// on PostgreSQL once its workers start. A worker that is gone does not
// count (its running jobs refuse the copy on their own).
func (a *app) refuseLiveWorkers(ctx context.Context, st queue.Store) error {
	live, err := a.liveWorkers(ctx, st)
	if err != nil || len(live) == 0 {
		return err
	}
	w := live[0]
	how := "queuectl worker stop"
	switch {
	case w.Service:
		how = "SIGTERM or its service manager; worker stop leaves services alone"
	case w.Host != a.hostName():
		how = "queuectl worker stop --all-hosts, or worker stop on that host"
	}
	return fmt.Errorf("migrate: %s %d on %s is running on the source; stop it first (%s)",
		w.Kind(), w.PID, printable(w.Host), how)
}

// liveWorkers are the registered workers and services that still run
// (supervise.Alive): a killed one stays registered until another
// unregisters it.
func (a *app) liveWorkers(ctx context.Context, st queue.Store) ([]*queue.WorkerInfo, error) {
	ws, err := st.ListWorkers(ctx)
	if err != nil {
		return nil, err
	}
	now, err := supervise.HeartbeatNow(ctx, st, a.now())
	if err != nil {
		return nil, err
	}
	host := a.hostName()
	return slices.DeleteFunc(ws, func(w *queue.WorkerInfo) bool { return !supervise.Alive(w, host, now) }), nil
}

// runningJobError is readAllJobs' refusal of a job in processing.
type runningJobError struct{ job, worker string }

func (e *runningJobError) Error() string {
	return fmt.Sprintf("migrate: job %q is running; stop the workers and services first (queuectl worker stop)", e.job)
}

// explainRunning is the refusal of a running job. When the worker holding
// it is gone (killed, crashed, its host lost), stopping workers does not
// help: the job stays processing until a worker rescues it, so the error
// says to let one do so first.
func (a *app) explainRunning(ctx context.Context, st queue.Store, e *runningJobError) error {
	live, err := a.liveWorkers(ctx, st)
	if err != nil || slices.ContainsFunc(live, func(w *queue.WorkerInfo) bool { return w.ID == e.worker }) {
		return e
	}
	return fmt.Errorf("migrate: job %q is marked running by worker %s, which is gone; let a worker rescue it first "+
		"(queuectl worker start, then worker stop once the job is no longer processing: at once for a worker of this host, after its lease for another host's)",
		e.job, printable(e.worker))
}

// readAllJobs reads every job, oldest first, with its history and outputs.
// A running job stops the copy: its outcome would be lost.
func readAllJobs(ctx context.Context, st queue.Store) ([]queue.JobRecord, int, error) {
	jobs, err := st.ListJobs(ctx, queue.ListParams{})
	if err != nil {
		return nil, 0, err
	}
	slices.Reverse(jobs) // newest first → insertion order
	recs := make([]queue.JobRecord, 0, len(jobs))
	attempts := 0
	for _, j := range jobs {
		if j.State == queue.StateProcessing {
			return nil, 0, &runningJobError{job: j.ID, worker: j.Worker}
		}
		hist, err := st.Attempts(ctx, j.ID)
		if err != nil {
			return nil, 0, err
		}
		for i, h := range hist {
			out, err := st.OutputAt(ctx, j.ID, i) // by place: numbers repeat after a retry of a dead job
			if err != nil {
				return nil, 0, err
			}
			h.Output = out.Output
		}
		attempts += len(hist)
		recs = append(recs, queue.JobRecord{Job: j, History: hist})
	}
	return recs, attempts, nil
}

// copySetup copies settings, declared queues, queue pauses and limits, and
// recurring jobs (their schedule cursors start now in the target, as when a
// file is applied).
func copySetup(ctx context.Context, src, dst queue.Store, now time.Time) (settings, queues, templates int, err error) {
	kv, err := src.GetConfig(ctx)
	if err != nil {
		return 0, 0, 0, err
	}
	for _, k := range slices.Sorted(maps.Keys(kv)) {
		if err := dst.SetConfig(ctx, k, kv[k]); err != nil {
			return 0, 0, 0, err
		}
	}
	qs, err := src.Queues(ctx)
	if err != nil {
		return 0, 0, 0, err
	}
	cs, err := src.QueueControls(ctx)
	if err != nil {
		return 0, 0, 0, err
	}
	var controls []queue.ControlUpdate // pauses and limits
	for _, c := range cs {
		controls = append(controls, queue.ControlUpdate{Names: []string{c.Name}, Paused: &c.Paused, MaxRunning: &c.MaxRunning, Rate: &c.Rate})
	}
	ts, err := src.Templates(ctx)
	if err != nil {
		return 0, 0, 0, err
	}
	if _, err := dst.ApplyConfig(ctx, queue.ConfigApply{Queues: qs, Limits: controls, Templates: ts, Now: now}); err != nil {
		return 0, 0, 0, err
	}
	return len(kv), len(qs), len(ts), nil
}

func countAll(counts []queue.Count) int {
	n := 0
	for _, c := range counts {
		n += c.N
	}
	return n
}
