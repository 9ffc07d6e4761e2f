package storetest

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/queuectl/queuectl/queue"
)

// An import decides each job as a batch of the same jobs, enqueued one
// after another, does: the same jobs added, the same unique-key holders,
// the same states, reasons and dependencies. A store may decide an
// import's chunk from reads made once for the whole chunk; this holds it
// to the one-at-a-time rule over a mix of unique keys (held by stored
// jobs, finished ones within and outside a window, jobs of the same chunk
// or of an earlier one, jobs cancelled as they were staged) and
// dependencies (on stored jobs dead, done or pending, on jobs added and
// not added).
func testImportDecidesAsInserts(t *testing.T, open Opener) {
	s := open(t)
	const n, chunk = 90, 25
	mix := func(p string) []*queue.Job {
		q := p + "q"
		deadJob(t, s, p+"dead", q)
		insert(t, s, job(t, p+"done", func(n *queue.NewJob) { n.UniqueKey, n.Queue = p+"k1", q }))
		finish(t, s, claim(t, s, "w", 1, t0, q)[0], "w", succeeded(t0, ""), t0)
		insert(t, s, job(t, p+"open", func(n *queue.NewJob) { n.UniqueKey, n.Queue = p+"k0", q }))

		rng := rand.New(rand.NewPCG(15, 2)) // the same mix for both prefixes
		named := []string{"dead", "done", "open"}
		jobs := make([]*queue.Job, n)
		for i := range jobs {
			id := fmt.Sprintf("j%02d", i)
			jobs[i] = job(t, p+id, func(nj *queue.NewJob) {
				nj.Queue = q
				if rng.IntN(2) == 0 {
					nj.UniqueKey = p + fmt.Sprintf("k%d", rng.IntN(12))
					nj.UniqueFor = []time.Duration{0, 10 * time.Minute, time.Hour}[rng.IntN(3)]
				}
				if rng.IntN(4) == 0 { // cancelled as it is staged
					nj.After = append(nj.After, p+"dead")
				}
				for range rng.IntN(3) {
					if dep := p + named[rng.IntN(len(named))]; !slices.Contains(nj.After, dep) {
						nj.After = append(nj.After, dep)
					}
				}
			})
			at := t0.Add(30 * time.Minute)
			jobs[i].CreatedAt, jobs[i].UpdatedAt, jobs[i].RunAt = at, at, at
			named = append(named, id)
		}
		return jobs
	}
	inserted, imported := mix("a-"), mix("b-")
	insert(t, s, inserted...)
	imp := begin(t, s)
	for i := 0; i < n; i += chunk {
		stage(t, imp, imported[i:min(i+chunk, n)])
	}
	if err := imp.Commit(ctx(t)); err != nil {
		t.Fatalf("commit: %v", err)
	}

	describe := func(p string, j *queue.Job) string {
		if j.ExistingID != "" {
			return "not added, held by " + strings.TrimPrefix(j.ExistingID, p)
		}
		got := get(t, s, j.ID)
		var after []string
		for _, id := range got.After {
			after = append(after, strings.TrimPrefix(id, p))
		}
		return fmt.Sprintf("%s %q after %v", got.State, strings.ReplaceAll(got.Error, p, ""), after)
	}
	states := map[string]bool{}
	for i := range n {
		want, got := describe("a-", inserted[i]), describe("b-", imported[i])
		if got != want {
			t.Errorf("j%02d: imported %s; inserted %s", i, got, want)
		}
		states[strings.Fields(want)[0]] = true
		if holder := strings.TrimPrefix(want, "not added, held by "); holder != want && get(t, s, "a-"+holder).State == queue.StateCancelled {
			states["held by cancelled"] = true // a finished holder within the window
		}
	}
	// The mix reaches every outcome, or the comparison proves less.
	for _, want := range []string{"not", "pending", "waiting", "cancelled", "held by cancelled"} {
		if !states[want] {
			t.Errorf("no job of the mix ended %q: %v", want, states)
		}
	}
}
