package main

import (
	"bytes"
	"context"
	"os"
	"reflect"
	"slices"
	"strings"
	"syscall"

	"github.com/queuectl/queuectl/config"
	"github.com/queuectl/queuectl/internal/sdnotify"
	"github.com/queuectl/queuectl/queue"
)

// waitForStop handles SIGHUP (reload) until a stop signal arrives or the
// store asks this service to stop.
func (s *service) waitForStop(stops, hups <-chan os.Signal) {
	for {
		var sig os.Signal
		select {
		case sig = <-stops:
		case sig = <-hups:
		case <-s.eng.StopRequested():
			s.log.Info().Msg("stop requested")
			sig = syscall.SIGTERM
		}
		if sig != syscall.SIGHUP {
			s.log.Info().Str("signal", sig.String()).Int64("grace_ms", s.o.grace.Milliseconds()).
				Msg("stopping: running jobs may finish (send the signal again to stop them)")
			return
		}
		// A stop signal cancels a reload that waits on the database
		// (a lock, a server that stopped answering); the loop then
		// reads the signal and stops.
		s.notify(sdnotify.Reloading)
		ctx, done := cancelOnStop(context.Background())
		s.reload(ctx)
		done()
		s.notify(sdnotify.Ready)
	}
}

// notify tells systemd; a failure is logged, never fatal: the service
// works the same without a supervisor listening.
func (s *service) notify(state string) {
	if err := s.notifier.Notify(state); err != nil {
		s.log.Warn().Err(err).Str("state", state).Msg("notify systemd")
	}
}

func (s *service) reload(ctx context.Context) {
	var diags bytes.Buffer
	a := *s.a
	a.stderr = &diags
	// A --var the file no longer declares is a warning: its value can
	// only go with a restart, and refusing every reload until then would
	// keep the service on the old file.
	f, err := a.loadFile(&s.a.file, config.Options{UndeclaredVarsWarn: true})
	if err != nil {
		s.log.Error().Str("config", s.a.file.path).Str("diagnostics", strings.TrimSpace(diags.String())).
			Msg("reload failed; keeping the previous configuration")
		return
	}
	if diags.Len() > 0 {
		s.log.Warn().Str("config", s.a.file.path).Str("diagnostics", strings.TrimSpace(diags.String())).
			Msg("configuration warnings")
	}
	for _, c := range []struct {
		changed bool
		what    string
	}{
		{f.Database != s.started.Database, "the database setting"},
		{!reflect.DeepEqual(f.HTTP, s.started.HTTP), "the http block"},
	} {
		if c.changed {
			s.log.Warn().Msg(c.what + " differs from the one the service started with; it takes effect on restart")
		}
	}
	changes := diffFiles(s.file, f)
	overridden, err := s.apply(ctx, f)
	if err != nil {
		s.log.Error().Err(err).Msg("reload failed; keeping the previous configuration")
		return
	}
	ev := s.log.Info().Int("queues", len(f.Queues)).Int("jobs", len(f.Jobs))
	if changes.empty() && overridden == nil {
		ev.Msg("configuration reloaded: nothing changed")
		return
	}
	for _, c := range []struct {
		key   string
		names []string
	}{
		{"queues_added", changes.queues.added}, {"queues_removed", changes.queues.removed}, {"queues_changed", changes.queues.changed},
		{"jobs_added", changes.jobs.added}, {"jobs_removed", changes.jobs.removed}, {"jobs_changed", changes.jobs.changed},
	} {
		if len(c.names) > 0 {
			ev = ev.Strs(c.key, c.names)
		}
	}
	if changes.other != nil {
		ev = ev.Strs("settings_changed", changes.other)
	}
	if overridden != nil {
		ev = ev.Strs("queue_limits_restored", overridden)
	}
	ev.Msg("configuration reloaded")
}

// logOverridden warns, as the service starts, that the file's limits
// replaced different ones stored for its queues (docs/config.md).
func (s *service) logOverridden(queues []string) {
	if queues != nil {
		s.log.Warn().Strs("queue_limits_replaced", queues).Msg("stored queue limits replaced by the file's")
	}
}

// nameDiff lists names added, removed and changed between two versions.
type nameDiff struct{ added, removed, changed []string }

// fileDiff is what a reload changes.
type fileDiff struct {
	queues, jobs nameDiff
	other        []string // file-wide settings: defaults, retention
}

func (d fileDiff) empty() bool {
	return reflect.DeepEqual(d, fileDiff{})
}

func diffFiles(old, cur *config.File) fileDiff {
	var d fileDiff
	d.queues = diffNamed(old.Queues, cur.Queues, func(q config.Queue) string { return q.Name })
	d.jobs = diffNamed(old.Jobs, cur.Jobs, func(j config.Job) string { return j.Name })
	if !reflect.DeepEqual(old.Defaults, cur.Defaults) {
		d.other = append(d.other, "defaults")
	}
	if old.Retention != cur.Retention {
		d.other = append(d.other, "retention")
	}
	return d
}

// diffNamed compares two lists of named values.
func diffNamed[T any](old, cur []T, name func(T) string) nameDiff {
	var d nameDiff
	before := map[string]T{}
	for _, v := range old {
		before[name(v)] = v
	}
	for _, v := range cur {
		prev, ok := before[name(v)]
		switch {
		case !ok:
			d.added = append(d.added, name(v))
		case !reflect.DeepEqual(prev, v):
			d.changed = append(d.changed, name(v))
		}
		delete(before, name(v))
	}
	for n := range before {
		d.removed = append(d.removed, n)
	}
	slices.Sort(d.removed)
	return d
}

// startPruning (re)starts the pruner for a retention block; a block that
// keeps everything starts none.
func (s *service) startPruning(r config.Retention) {
	s.stopPruning()
	if r == (config.Retention{}) {
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	s.stopPruner = cancel
	p := queue.NewPruner(s.st, queue.PrunerConfig{
		Retention: queue.Retention{Completed: r.Completed, Dead: r.Dead, Cancelled: r.Cancelled, Output: r.Output},
		Now:       s.a.now,
		Log:       s.log,
	})
	s.pruned.Add(1)
	go func() {
		defer s.pruned.Done()
		p.Run(ctx)
	}()
}

func (s *service) stopPruning() {
	if s.stopPruner != nil {
		s.stopPruner()
		s.pruned.Wait()
		s.stopPruner = nil
	}
}
