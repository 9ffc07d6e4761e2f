package storetest

import (
	"fmt"
	"math"
	"sort"
	"testing"
	"time"

	"github.com/queuectl/queuectl/queue"
)

// runTimeOutcomes are the outcomes the run-time tests give attempts, in
// turn: every class, and failing outcomes other than failed.
var runTimeOutcomes = []queue.Outcome{queue.OutcomeSucceeded, queue.OutcomeFailed, queue.OutcomeSucceeded,
	queue.OutcomeTimedOut, queue.OutcomeSucceeded, queue.OutcomeInterrupted, queue.OutcomeLost}

// SampleAttempts returns n attempts, one per job (rt000, rt001, ...), of
// queues a and b, each outcome of runTimeOutcomes in turn, with run times
// from none to ten minutes (log-uniform, a few of a millisecond or less,
// the longest all different) that end over the three hours from t0, at
// whole microseconds. The same n gives the same attempts.
func SampleAttempts(n int) []queue.AttemptStat {
	seed := uint64(7)
	next := func() float64 {
		seed = seed*6364136223846793005 + 1442695040888963407
		return float64(seed>>11) / (1 << 53)
	}
	seen := map[time.Duration]bool{}
	out := make([]queue.AttemptStat, n)
	for i := range out {
		d := time.Duration(math.Exp(next()*math.Log(600e6))) * time.Microsecond // 1 µs to 10 min
		switch i % 50 {
		case 0:
			d = 0
		case 1:
			d = 700 * time.Microsecond
		case 2:
			d = time.Millisecond
		}
		for d > time.Second && seen[d] {
			d += time.Microsecond
		}
		seen[d] = true
		out[i] = queue.AttemptStat{JobID: fmt.Sprintf("rt%03d", i), Queue: []string{"a", "b"}[i%2],
			Outcome: runTimeOutcomes[i%len(runTimeOutcomes)], Duration: d,
			FinishedAt: t0.Add(time.Duration(next() * float64(3*time.Hour))).Truncate(time.Microsecond)}
	}
	return out
}

// runTimeJobs finishes n jobs with the first n of 2n SampleAttempts, in
// batches; the jobs whose attempt was interrupted run again and succeed
// (with the run times and ends of the rest). It returns every attempt
// recorded.
func runTimeJobs(t *testing.T, s queue.Store, n int) []queue.AttemptStat {
	t.Helper()
	sample := SampleAttempts(2 * n)
	var jobs []*queue.Job
	for _, a := range sample[:n] {
		jobs = append(jobs, job(t, a.JobID, func(nj *queue.NewJob) { nj.Queue = a.Queue; nj.MaxRetries = ptr(0) }))
	}
	insert(t, s, jobs...)
	var all []queue.AttemptStat
	run := func(claimed []*queue.Job, sample []queue.AttemptStat, outcome func(a queue.AttemptStat) queue.Outcome) {
		var fs []queue.Finish
		for i, j := range claimed {
			a := sample[i]
			a.JobID, a.Queue, a.Outcome = j.ID, j.Queue, outcome(a)
			code := 0
			// The clock reads nanoseconds; the stores keep microseconds,
			// each time cut to its microsecond, and count the run time
			// between the two cut times: the sample's duration. The two
			// parts differ, so a store that counted the nanoseconds, or
			// rounded, would count another.
			e := queue.End{Outcome: a.Outcome, ExitCode: &code, Started: a.FinishedAt.Add(-a.Duration + 700*time.Nanosecond),
				Finished: a.FinishedAt.Add(200 * time.Nanosecond)}
			fs = append(fs, queue.RetryPolicy{}.Decide(j, "w", e, a.FinishedAt))
			all = append(all, a)
			if len(fs) == 40 || i == len(claimed)-1 {
				applied, err := s.FinishJobs(ctx(t), fs)
				if err != nil {
					t.Fatalf("finish: %v", err)
				}
				for k, ok := range applied {
					if !ok {
						t.Fatalf("finish %s: not applied", fs[k].JobID)
					}
				}
				fs = nil
			}
		}
	}
	first := claim(t, s, "w", n, t0)
	byID := map[string]queue.AttemptStat{}
	for _, a := range sample[:n] {
		byID[a.JobID] = a
	}
	ordered := make([]queue.AttemptStat, len(first))
	for i, j := range first {
		ordered[i] = byID[j.ID]
	}
	run(first, ordered, func(a queue.AttemptStat) queue.Outcome { return a.Outcome })
	run(claim(t, s, "w", n, t0.Add(4*time.Hour)), sample[n:], func(queue.AttemptStat) queue.Outcome { return queue.OutcomeSucceeded })
	return all
}

// CheckRunTimes checks what s reports of the attempts that ended in the
// minute of since or later against want, every attempt stored: per queue
// and class, the counts exactly; the least and greatest run time exactly
// (within a bucket when deleted is set: jobs were deleted); the
// percentiles within half a bucket; the slowest attempts exactly.
func CheckRunTimes(t *testing.T, s queue.Store, since time.Time, want []queue.AttemptStat, deleted bool) {
	t.Helper()
	p := queue.RunTimeParams{Since: since}
	var in []queue.AttemptStat
	for _, a := range want {
		if !a.FinishedAt.Before(p.Start()) {
			in = append(in, a)
		}
	}
	got, err := s.RunTimes(ctx(t), p)
	if err != nil {
		t.Fatalf("run times: %v", err)
	}
	per := func(pick func(q string, class queue.Outcome) bool) (queue.RunTimeHistogram, []time.Duration) {
		var h queue.RunTimeHistogram
		for _, c := range got {
			if pick(c.Queue, c.Class) {
				h.Add(c)
			}
		}
		var exact []time.Duration
		for _, a := range in {
			if pick(a.Queue, queue.OutcomeClass(a.Outcome)) {
				exact = append(exact, a.Duration)
			}
		}
		return h, exact
	}
	for _, q := range []string{"a", "b", ""} {
		for _, class := range []queue.Outcome{queue.OutcomeSucceeded, queue.OutcomeFailed, queue.OutcomeInterrupted, ""} {
			name := fmt.Sprintf("since %s, queue %q, class %q", since.Format(time.TimeOnly), q, class)
			h, exact := per(func(gq string, gc queue.Outcome) bool { return (q == "" || gq == q) && (class == "" || gc == class) })
			checkHistogram(t, name, &h, exact, deleted)
		}
	}
	sort.Slice(in, func(i, j int) bool { return in[i].Duration > in[j].Duration })
	slow, err := s.SlowestAttempts(ctx(t), queue.SlowestParams{Since: since, Limit: 5})
	if err != nil {
		t.Fatalf("slowest: %v", err)
	}
	if len(slow) != min(5, len(in)) {
		t.Fatalf("since %s: %d slowest attempts, want %d", since, len(slow), min(5, len(in)))
	}
	for i, a := range slow {
		w := in[i]
		if a.JobID != w.JobID || a.Queue != w.Queue || a.Duration != w.Duration || a.Outcome != w.Outcome || !a.FinishedAt.Equal(w.FinishedAt) {
			t.Fatalf("since %s: slowest %d is %+v, want %+v", since, i, a, w)
		}
	}
}

// checkHistogram compares a histogram with the exact run times it counts:
// the least and greatest exactly, unless jobs were deleted (then within a
// bucket), and the percentiles within half a bucket, which is at most half
// a millisecond for the first bucket (up to a millisecond) and a 64th of
// the run time for the others.
func checkHistogram(t *testing.T, name string, h *queue.RunTimeHistogram, exact []time.Duration, deleted bool) {
	t.Helper()
	if h.Count() != int64(len(exact)) {
		t.Fatalf("%s: %d attempts, want %d", name, h.Count(), len(exact))
	}
	if len(exact) == 0 {
		return
	}
	sort.Slice(exact, func(i, j int) bool { return exact[i] < exact[j] })
	lo, hi := exact[0], exact[len(exact)-1]
	if !deleted && (h.Min() != lo || h.Max() != hi) || !near(h.Min(), lo, 2) || !near(h.Max(), hi, 2) {
		t.Fatalf("%s: run times from %s to %s, want %s to %s", name, h.Min(), h.Max(), lo, hi)
	}
	for _, q := range []float64{0.5, 0.95, 0.99} {
		want := exact[max(0, int(math.Ceil(q*float64(len(exact))))-1)]
		if got := h.Quantile(q); !near(got, want, 1) {
			t.Fatalf("%s: p%g is %s, want %s within half a bucket", name, q*100, got, want)
		}
	}
}

// near reports whether got is within halves half-buckets of want.
func near(got, want time.Duration, halves int64) bool {
	bound := max(want/(2*queue.RunTimeBucketRatio), 500*time.Microsecond)
	return (got - want).Abs() <= time.Duration(halves)*bound
}

// testRunTimes: the run-time histograms and slowest attempts of windows
// that start anywhere (in a minute, before an hour), per step, and after
// deletions, against the attempts themselves.
func testRunTimes(t *testing.T, open Opener) {
	s := open(t)
	all := runTimeJobs(t, s, 350)
	for _, since := range []time.Time{
		t0.Add(-time.Hour),                                    // everything
		t0.Add(37*time.Minute + 30*time.Second),               // in a minute: from its start
		t0.Add(time.Hour - 10*time.Minute),                    // minutes, then hours
		t0.Add(2*time.Hour + 59*time.Minute + 59*time.Second), // the last minute
		t0.Add(3 * time.Hour),                                 // nothing
	} {
		CheckRunTimes(t, s, since, all, false)
	}
	for _, p := range []queue.RunTimeParams{
		{Since: t0, Step: 5 * time.Minute},
		{Since: t0.Add(-time.Hour), Step: time.Hour},                           // hour slots
		{Since: t0.Add(30 * time.Minute), Step: time.Hour},                     // hours not on the hour: minutes
		{Since: t0.Add(90*time.Second + 7*time.Second), Step: 7 * time.Minute}, // from the minute's start
	} {
		checkSteps(t, s, p, all, false)
	}

	// Retention deletes completed jobs, discard dead ones: their attempts
	// leave the statistics.
	cut := t0.Add(90 * time.Minute)
	if n, err := s.DeleteJobs(ctx(t), queue.DeleteParams{Before: cut, States: []queue.State{queue.StateCompleted}, Limit: 20}); err != nil || n != 20 {
		t.Fatalf("delete a batch: %d %v", n, err)
	}
	p := queue.NewPruner(s, queue.PrunerConfig{Retention: queue.Retention{Completed: time.Minute}, Batch: 15, Now: func() time.Time { return cut }})
	if _, err := p.PruneOnce(ctx(t)); err != nil {
		t.Fatal(err)
	}
	dead, err := s.DiscardJobs(ctx(t), queue.DiscardParams{AllDead: true, Queue: "a"})
	if err != nil || len(dead) == 0 {
		t.Fatalf("discard dead jobs of a: %v %v", dead, err)
	}
	all = storedAttempts(t, s, all)
	CheckRunTimes(t, s, t0.Add(-time.Hour), all, true)
	CheckRunTimes(t, s, t0.Add(time.Hour-10*time.Minute), all, true)
	checkSteps(t, s, queue.RunTimeParams{Since: t0, Step: 5 * time.Minute}, all, true)

	// Deleting every job leaves nothing to count.
	var ids []string
	for _, a := range all {
		ids = append(ids, a.JobID)
	}
	if _, err := s.DiscardJobs(ctx(t), queue.DiscardParams{IDs: dedupe(ids)}); err != nil {
		t.Fatal(err)
	}
	CheckRunTimes(t, s, t0.Add(-time.Hour), nil, true)
}

// checkSteps checks the counts per step of p, per queue and class, and the
// percentiles of each step.
func checkSteps(t *testing.T, s queue.Store, p queue.RunTimeParams, want []queue.AttemptStat, deleted bool) {
	t.Helper()
	got, err := s.RunTimes(ctx(t), p)
	if err != nil {
		t.Fatalf("run times per %s: %v", p.Step, err)
	}
	type key struct {
		slot  time.Time
		queue string
		class queue.Outcome
	}
	hists := map[key]*queue.RunTimeHistogram{}
	for _, c := range got {
		k := key{c.Slot, c.Queue, c.Class}
		if hists[k] == nil {
			hists[k] = &queue.RunTimeHistogram{}
		}
		hists[k].Add(c)
	}
	exact := map[key][]time.Duration{}
	for _, a := range want {
		if a.FinishedAt.Before(p.Start()) {
			continue
		}
		k := key{p.Start().Add(a.FinishedAt.Sub(p.Start()) / p.Step * p.Step), a.Queue, queue.OutcomeClass(a.Outcome)}
		exact[k] = append(exact[k], a.Duration)
		if hists[k] == nil {
			hists[k] = &queue.RunTimeHistogram{}
		}
	}
	for k, h := range hists {
		checkHistogram(t, fmt.Sprintf("step %s from %s: %+v", p.Step, p.Since.Format(time.TimeOnly), k), h, exact[k], deleted)
	}
}

// storedAttempts is the part of all whose jobs s still holds.
func storedAttempts(t *testing.T, s queue.Store, all []queue.AttemptStat) []queue.AttemptStat {
	t.Helper()
	var out []queue.AttemptStat
	for _, a := range all {
		if _, err := s.GetJob(ctx(t), a.JobID); err == nil {
			out = append(out, a)
		}
	}
	if len(out) == 0 || len(out) == len(all) {
		t.Fatalf("%d of %d attempts left: the deletions should take some", len(out), len(all))
	}
	return out
}

func dedupe(ids []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, id := range ids {
		if !seen[id] {
			seen[id] = true
			out = append(out, id)
		}
	}
	return out
}
