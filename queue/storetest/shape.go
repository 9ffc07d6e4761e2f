package storetest

import (
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/queuectl/queuectl/queue"
)

// testLabelsAndHooks checks that labels and hooks round-trip and that a
// list filtered by labels keeps the jobs carrying every one of them.
func testLabelsAndHooks(t *testing.T, open Opener) {
	s := open(t)
	hooks := queue.Hooks{OnSuccess: "echo ok", OnDead: "echo dead"}
	insert(t, s,
		job(t, "a", func(n *queue.NewJob) {
			n.Labels, n.Hooks = map[string]string{"team": "data", "env": "prod"}, hooks
		}),
		job(t, "b", func(n *queue.NewJob) { n.Labels = map[string]string{"team": "data", "env": "dev"} }),
		job(t, "c", nil))
	got := get(t, s, "a")
	if got.Labels["team"] != "data" || got.Labels["env"] != "prod" || len(got.Labels) != 2 || got.Hooks != hooks {
		t.Fatalf("round trip: labels %v hooks %+v", got.Labels, got.Hooks)
	}
	if c := get(t, s, "c"); c.Labels != nil || !c.Hooks.IsZero() {
		t.Fatalf("a job without labels: %v %+v", c.Labels, c.Hooks)
	}
	for _, tc := range []struct {
		labels map[string]string
		want   []string
	}{
		{map[string]string{"team": "data"}, []string{"b", "a"}},
		{map[string]string{"team": "data", "env": "prod"}, []string{"a"}},
		{map[string]string{"env": "staging"}, nil},
		{nil, []string{"c", "b", "a"}},
	} {
		jobs, err := s.ListJobs(ctx(t), queue.ListParams{Labels: tc.labels})
		if err != nil {
			t.Fatal(err)
		}
		if !equal(ids(jobs), tc.want) {
			t.Errorf("list --label %v: %v, want %v", tc.labels, ids(jobs), tc.want)
		}
	}
	// A claimed job carries its hooks to the worker that runs it.
	for _, j := range claim(t, s, "w", 3, t0) {
		if j.ID == "a" && j.Hooks != hooks {
			t.Fatalf("claimed job's hooks: %+v", j.Hooks)
		}
	}
}

// testUniqueKey checks that a job whose unique key an unfinished job holds
// is not inserted and names that job, within a batch too, and that
// UniqueFor extends the hold to jobs finished within the window.
func testUniqueKey(t *testing.T, open Opener) {
	s := open(t)
	keyed := func(id string, mod func(n *queue.NewJob)) *queue.Job {
		return job(t, id, func(n *queue.NewJob) {
			n.UniqueKey = "report"
			if mod != nil {
				mod(n)
			}
		})
	}
	a, b := keyed("a", nil), keyed("b", nil)
	insert(t, s, a, b, job(t, "other", func(n *queue.NewJob) { n.UniqueKey = "other" }))
	if a.ExistingID != "" || b.ExistingID != "a" {
		t.Fatalf("same key in one batch: a.ExistingID %q b.ExistingID %q", a.ExistingID, b.ExistingID)
	}
	if _, err := s.GetJob(ctx(t), "b"); !errors.Is(err, queue.ErrNotFound) {
		t.Fatalf("the duplicate was stored: %v", err)
	}
	c := keyed("c", nil)
	insert(t, s, c)
	if c.ExistingID != "a" {
		t.Fatalf("pending holder: ExistingID %q", c.ExistingID)
	}
	// Running still holds the key; completing releases it.
	got := claim(t, s, "w", 1, t0, "default")
	if len(got) != 1 || got[0].ID != "a" && got[0].ID != "other" {
		t.Fatalf("claim: %v", ids(got))
	}
	for got[0].ID != "a" {
		finish(t, s, got[0], "w", succeeded(t0, ""), t0)
		got = claim(t, s, "w", 1, t0)
	}
	d := keyed("d", nil)
	insert(t, s, d)
	if d.ExistingID != "a" {
		t.Fatalf("running holder: ExistingID %q", d.ExistingID)
	}
	done := t0.Add(10 * time.Minute)
	finish(t, s, got[0], "w", succeeded(done, ""), done)
	later := func(id string, window time.Duration) *queue.Job {
		j := keyed(id, func(n *queue.NewJob) { n.UniqueFor = window })
		j.CreatedAt, j.UpdatedAt, j.RunAt = done.Add(30*time.Minute), done.Add(30*time.Minute), done.Add(30*time.Minute)
		return j
	}
	e := later("e", time.Hour)
	insert(t, s, e)
	if e.ExistingID != "a" {
		t.Fatalf("finished 30m ago, unique for 1h: ExistingID %q", e.ExistingID)
	}
	f := later("f", 10*time.Minute)
	insert(t, s, f)
	if f.ExistingID != "" || get(t, s, "f").UniqueKey != "report" {
		t.Fatalf("finished 30m ago, unique for 10m: ExistingID %q", f.ExistingID)
	}
}

// testUniqueKeyRace enqueues the same key from several handles at once:
// exactly one job results, and every caller learns its id.
func testUniqueKeyRace(t *testing.T, open Opener) {
	const n = 8
	handles := make([]queue.Store, n)
	for i := range handles {
		handles[i] = open(t)
	}
	var wg sync.WaitGroup
	got := make([]string, n)
	errs := make([]error, n)
	start := make(chan struct{})
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			j := job(t, fmt.Sprintf("r%d", i), func(n *queue.NewJob) { n.UniqueKey = "once" })
			<-start
			errs[i] = handles[i].InsertJobs(ctx(t), []*queue.Job{j})
			got[i] = j.ID
			if j.ExistingID != "" {
				got[i] = j.ExistingID
			}
		}()
	}
	close(start)
	wg.Wait()
	for i := range n {
		if errs[i] != nil {
			t.Fatalf("insert %d: %v", i, errs[i])
		}
		if got[i] != got[0] {
			t.Fatalf("callers were told different jobs: %v", got)
		}
	}
	jobs, err := handles[0].ListJobs(ctx(t), queue.ListParams{})
	if err != nil || len(jobs) != 1 || jobs[0].ID != got[0] {
		t.Fatalf("want exactly job %s, got %v (%v)", got[0], ids(jobs), err)
	}
}

// testDependencies checks that a job enqueued after others waits, outside
// the claim, until all of them completed, and starts in the state their
// outcomes decide.
func testDependencies(t *testing.T, open Opener) {
	s := open(t)
	insert(t, s, job(t, "a", nil), job(t, "b", nil))
	c := job(t, "c", func(n *queue.NewJob) { n.After = []string{"b", "a"} })
	d := job(t, "d", func(n *queue.NewJob) { n.After = []string{"c"} })
	insert(t, s, c, d)
	if got := get(t, s, "c"); got.State != queue.StateWaiting || !equal(got.After, []string{"a", "b"}) {
		t.Fatalf("c: %s after %v", got.State, got.After)
	}
	err := s.InsertJobs(ctx(t), []*queue.Job{job(t, "x", nil), job(t, "y", func(n *queue.NewJob) { n.After = []string{"a", "nope"} })})
	if !errors.Is(err, queue.ErrInvalid) || !strings.Contains(err.Error(), `"nope"`) {
		t.Fatalf("unknown dependency: %v", err)
	}
	if _, err := s.GetJob(ctx(t), "x"); !errors.Is(err, queue.ErrNotFound) {
		t.Fatalf("a refused batch stored x: %v", err)
	}
	got := claim(t, s, "w", 10, t0)
	if !equal(sorted(ids(got)), []string{"a", "b"}) {
		t.Fatalf("claimed %v: waiting jobs must not be claimed", ids(got))
	}
	at := t0.Add(time.Minute)
	for _, j := range got {
		finish(t, s, j, "w", succeeded(at, ""), at)
		want := queue.StatePending
		if j.ID == got[0].ID {
			want = queue.StateWaiting // the other one still runs
		}
		if st := get(t, s, "c").State; st != want {
			t.Fatalf("after %s completed, c is %s, want %s", j.ID, st, want)
		}
	}
	if c := get(t, s, "c"); !c.RunAt.Equal(at) || get(t, s, "d").State != queue.StateWaiting {
		t.Fatalf("released c: run_at %v (want %v); d %s", c.RunAt, at, get(t, s, "d").State)
	}
	// Enqueued after a completed job: pending at once.
	e := job(t, "e", func(n *queue.NewJob) { n.After = []string{"a"} })
	insert(t, s, e)
	if st := get(t, s, "e").State; st != queue.StatePending || e.State != queue.StatePending {
		t.Fatalf("after a completed job: %s", st)
	}
}

// testDependencyCascade checks that when a job ends dead or cancelled (or
// is discarded unfinished), the jobs waiting on it are cancelled with a
// reason naming it, and theirs in turn.
func testDependencyCascade(t *testing.T, open Opener) {
	s := open(t)
	insert(t, s, job(t, "a", func(n *queue.NewJob) { n.MaxRetries, n.Priority = ptr(0), 1 }), job(t, "p", nil), job(t, "q", nil))
	insert(t, s,
		job(t, "b", func(n *queue.NewJob) { n.After = []string{"a", "p"} }),
		job(t, "c", func(n *queue.NewJob) { n.After = []string{"b"} }),
		job(t, "r", func(n *queue.NewJob) { n.After = []string{"q"} }),
		job(t, "s", func(n *queue.NewJob) { n.After = []string{"r"} }),
		job(t, "u", func(n *queue.NewJob) { n.After = []string{"p"} }))
	j := claim(t, s, "w", 1, t0, "default")
	if len(j) != 1 || j[0].ID != "a" {
		t.Fatalf("claimed %v first", ids(j))
	}
	finish(t, s, j[0], "w", failed(t0), t0)
	for id, reason := range map[string]string{"b": "dependency a ended dead", "c": "dependency b was cancelled"} {
		if got := get(t, s, id); got.State != queue.StateCancelled || got.Error != reason {
			t.Fatalf("%s: %s %q, want cancelled %q", id, got.State, got.Error, reason)
		}
	}
	// A user cancels a waiting job: its dependents follow.
	if was, err := s.CancelJob(ctx(t), "r", t0); err != nil || was != queue.StateWaiting {
		t.Fatalf("cancel waiting r: %v %v", was, err)
	}
	if got := get(t, s, "s"); got.State != queue.StateCancelled || got.Error != "dependency r was cancelled" {
		t.Fatalf("s: %s %q", got.State, got.Error)
	}
	// A discarded pending job: its dependents cannot run.
	if _, err := s.DiscardJobs(ctx(t), queue.DiscardParams{IDs: []string{"p"}}); err != nil {
		t.Fatal(err)
	}
	if got := get(t, s, "u"); got.State != queue.StateCancelled || got.Error != "dependency p was discarded" {
		t.Fatalf("u: %s %q", got.State, got.Error)
	}
	// Enqueued after a dead job: cancelled at once.
	v := job(t, "v", func(n *queue.NewJob) { n.After = []string{"a"} })
	insert(t, s, v)
	if got := get(t, s, "v"); got.State != queue.StateCancelled || got.Error != "dependency a ended dead" {
		t.Fatalf("v: %s %q", got.State, got.Error)
	}
}

// testDependencyRace finishes a job from one handle while another enqueues
// a job after it: whichever commits first, the dependent must never be
// left waiting.
func testDependencyRace(t *testing.T, open Opener) {
	worker, enqueuer := open(t), open(t)
	for i := range 20 {
		dep := fmt.Sprintf("d%d", i)
		insert(t, worker, job(t, dep, nil))
		j := claim(t, worker, "w", 1, t0)
		if len(j) != 1 || j[0].ID != dep {
			t.Fatalf("claim %s: %v", dep, ids(j))
		}
		child := job(t, "c"+dep, func(n *queue.NewJob) { n.After = []string{dep} })
		f := queue.RetryPolicy{}.Decide(j[0], "w", succeeded(t0, ""), t0)
		var wg sync.WaitGroup
		var insertErr, finishErr error
		wg.Add(2)
		go func() { defer wg.Done(); insertErr = enqueuer.InsertJobs(ctx(t), []*queue.Job{child}) }()
		go func() { defer wg.Done(); _, finishErr = worker.FinishJobs(ctx(t), []queue.Finish{f}) }()
		wg.Wait()
		if insertErr != nil || finishErr != nil {
			t.Fatalf("round %d: insert %v finish %v", i, insertErr, finishErr)
		}
		if got := get(t, worker, child.ID); got.State != queue.StatePending {
			t.Fatalf("round %d: the dependent is %s after its dependency completed", i, got.State)
		}
		claim(t, worker, "w", 1, t0) // clear it out of the way
	}
}

func sorted(s []string) []string {
	out := append([]string(nil), s...)
	sort.Strings(out)
	return out
}

// testUniqueTemplate checks that a template declared unique skips a fire
// while one of its jobs is pending, whatever its overlap policy, and that
// its definition keeps the flag and the hooks.
func testUniqueTemplate(t *testing.T, open Opener) {
	s := open(t)
	tpl := template("uniq", queue.OverlapAllow)
	tpl.Unique = true
	tpl.Retry.Hooks = queue.Hooks{OnDead: "echo dead"}
	if err := s.ApplyTemplates(ctx(t), []*queue.Template{tpl}, t0); err != nil {
		t.Fatal(err)
	}
	if got := templatesByName(t, s)["uniq"]; !got.Unique || got.Retry.Hooks != tpl.Retry.Hooks {
		t.Fatalf("stored template: unique %v hooks %+v", got.Unique, got.Retry.Hooks)
	}
	qh := queue.Hooks{OnSuccess: "curl -fsS https://example.invalid/ok", OnFailure: "echo failed"}
	if err := s.ApplyQueues(ctx(t), []queue.QueueConfig{{Name: "mail", Concurrency: 1, Retry: queue.Overrides{Hooks: qh}}}); err != nil {
		t.Fatal(err)
	}
	if qs, err := s.Queues(ctx(t)); err != nil || len(qs) != 1 || qs[0].Retry.Hooks != qh {
		t.Fatalf("stored queue hooks: %+v %v", qs, err)
	}
	s1, s2, s3 := t0.Add(time.Minute), t0.Add(2*time.Minute), t0.Add(3*time.Minute)
	if res := fire(t, s, tpl, queue.FireCron, s1); !res.Fired {
		t.Fatalf("first slot: %+v", res)
	}
	if res := fire(t, s, tpl, queue.FireCron, s2); res.Fired || !res.Skipped || !res.Pending ||
		res.Why(tpl.Overlap) != "a run of it is still pending and unique = true" {
		t.Fatalf("second slot while the first run is pending: %+v (%s)", res, res.Why(tpl.Overlap))
	}
	if got := claim(t, s, "w", 10, s2); len(got) != 1 {
		t.Fatalf("claimed %v", ids(got))
	}
	// Running is not pending: overlap = allow lets the next slot fire.
	if res := fire(t, s, tpl, queue.FireCron, s3); !res.Fired || res.Pending {
		t.Fatalf("third slot while the first run runs: %+v", res)
	}
}
