package main

// How a configuration file's declarations become the store's queues,
// queue limits and recurring jobs (applyFile), for run, its reloads and
// cron trigger -c.

import (
	"context"
	"time"

	"github.com/queuectl/queuectl/config"
	"github.com/queuectl/queuectl/queue"
)

// templates converts the file's jobs to store templates.
func templates(f *config.File) []*queue.Template {
	var out []*queue.Template
	for _, j := range f.Jobs {
		out = append(out, &queue.Template{
			Name: j.Name, Queue: j.Queue, Schedule: j.Schedule, TimeZone: j.TimeZone, Command: j.Command, Dir: j.Dir,
			Env: j.Env, Overlap: j.Overlap, CatchUp: j.CatchUp, MaxCatchUp: j.MaxCatchUp, Jitter: j.Jitter,
			Priority: j.Priority, Enabled: j.Enabled, Retry: overrides(f.RetryFor(j.Queue, j.Retry)), Unique: j.Unique,
		})
	}
	return out
}

// queueConfigs converts the file's queues; the defaults block reaches jobs
// through the queues it declares.
func queueConfigs(f *config.File) []queue.QueueConfig {
	var out []queue.QueueConfig
	for _, q := range f.Queues {
		out = append(out, queue.QueueConfig{Name: q.Name, Concurrency: q.Concurrency, Retry: overrides(q.Retry.Or(f.Defaults))})
	}
	return out
}

func overrides(r config.Retry) queue.Overrides {
	return queue.Overrides{MaxRetries: r.MaxRetries, BackoffBase: r.BackoffBase, MaxBackoff: r.MaxBackoff, Timeout: r.Timeout,
		Hooks: queue.Hooks{OnSuccess: r.OnSuccess, OnFailure: r.OnFailure, OnDead: r.OnDead, Timeout: hookTimeout(r.HookTimeout)}}
}

// hookTimeout is a file's hook_timeout, 0 when unset (queue.HookTimeout).
func hookTimeout(d *time.Duration) time.Duration {
	if d == nil {
		return 0
	}
	return *d
}

// applyFile writes the file's queues, their limits and its templates to
// the store, in one transaction: a failure changes nothing, and the
// service keeps the file it had. It returns the stored controls of the
// declared queues whose limits it changed, as they were before. prev is
// the file applied before (nil at a start): a queue it declared with
// limits that f no longer declares has them released, unless they were
// changed since (queue set); released names those queues.
func applyFile(ctx context.Context, st queue.Store, f, prev *config.File, now time.Time) (replaced []queue.QueueControl, released []string, err error) {
	var limits []queue.ControlUpdate
	for _, q := range f.Queues {
		if q.Implicit {
			continue // not declared: its limits are queue set's
		}
		// The file says what a declared queue's limits are (none when
		// unset); a pause is left as it is.
		rate := fileRate(q)
		limits = append(limits, queue.ControlUpdate{Names: []string{q.Name}, MaxRunning: &q.MaxRunning, Rate: &rate})
	}
	drop, err := droppedLimits(ctx, st, f, prev)
	if err != nil {
		return nil, nil, err
	}
	for _, name := range drop {
		none, noRate := 0, queue.RateLimit{}
		limits = append(limits, queue.ControlUpdate{Names: []string{name}, MaxRunning: &none, Rate: &noRate})
	}
	before, err := st.ApplyConfig(ctx, queue.ConfigApply{Queues: queueConfigs(f), Limits: limits, Templates: templates(f), Now: now})
	if err != nil {
		return nil, nil, err
	}
	for _, u := range limits[:len(limits)-len(drop)] {
		if c, ok := controlOf(before, u.Names[0]); ok && (c.MaxRunning != *u.MaxRunning || !sameRate(c.Rate, *u.Rate)) {
			replaced = append(replaced, c)
		}
	}
	return replaced, drop, nil
}

// droppedLimits names the queues prev declared with limits that f no
// longer declares and whose stored limits are still prev's.
func droppedLimits(ctx context.Context, st queue.Store, f, prev *config.File) ([]string, error) {
	if prev == nil {
		return nil, nil
	}
	var gone []config.Queue
	for _, q := range prev.Queues {
		if _, still := declaredQueue(f, q.Name); !q.Implicit && !still && (q.MaxRunning > 0 || q.RateCount > 0) {
			gone = append(gone, q)
		}
	}
	if len(gone) == 0 {
		return nil, nil
	}
	stored, err := st.QueueControls(ctx)
	if err != nil {
		return nil, err
	}
	var names []string
	for _, q := range gone {
		if c, ok := controlOf(stored, q.Name); ok && c.MaxRunning == q.MaxRunning && sameRate(c.Rate, fileRate(q)) {
			names = append(names, q.Name)
		}
	}
	return names, nil
}

// controlOf finds a queue's stored control.
func controlOf(cs []queue.QueueControl, name string) (queue.QueueControl, bool) {
	for _, c := range cs {
		if c.Name == name {
			return c, true
		}
	}
	return queue.QueueControl{}, false
}

// sameRate reports whether two rate limits allow the same starts. Periods
// are stored in whole microseconds.
func sameRate(a, b queue.RateLimit) bool {
	if a.N <= 0 || b.N <= 0 {
		return a.N <= 0 && b.N <= 0
	}
	return a.N == b.N && a.Per.Truncate(time.Microsecond) == b.Per.Truncate(time.Microsecond)
}

func lanes(f *config.File) []queue.Lane {
	var out []queue.Lane
	for _, q := range f.Queues {
		out = append(out, queue.Lane{Name: q.Name, Queues: []string{q.Name}, Slots: q.Concurrency})
	}
	return out
}

// fileChangedLimits reports whether the queue's limits differ between an
// earlier version of the file (nil: none) and the current one.
func fileChangedLimits(old, cur *config.File, name string) bool {
	if old == nil {
		return false
	}
	was, wasDeclared := declaredQueue(old, name)
	is, isDeclared := declaredQueue(cur, name)
	return wasDeclared != isDeclared || was.MaxRunning != is.MaxRunning || !sameRate(fileRate(was), fileRate(is))
}

// declaredQueue finds a queue the file declares (an implicit default
// queue is not declared).
func declaredQueue(f *config.File, name string) (config.Queue, bool) {
	for _, q := range f.Queues {
		if q.Name == name && !q.Implicit {
			return q, true
		}
	}
	return config.Queue{}, false
}

// fileRate is a queue's rate limit as the file declares it (none when
// unset).
func fileRate(q config.Queue) queue.RateLimit { return queue.RateLimit{N: q.RateCount, Per: q.RatePer} }
