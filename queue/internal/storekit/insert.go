package storekit

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/queuectl/queuectl/queue"
)

// InsertTx is what Insert needs from a store's transaction.
type InsertTx interface {
	// UniqueHolder finds the job that holds key: one that is not final
	// or, when since is not zero, one that finished at or after since.
	UniqueHolder(ctx context.Context, key string, since time.Time) (id string, found bool, err error)
	// DependencyStates returns the states of those of ids that exist, each
	// locked against a concurrent finish where the dialect can.
	DependencyStates(ctx context.Context, ids []string) (map[string]queue.State, error)
	// Insert inserts j in its state; inserted is false, and nothing
	// changed, when an unfinished job already holds j's unique key.
	Insert(ctx context.Context, j *queue.Job) (inserted bool, err error)
	// InsertDeps records the jobs j runs after: after, which is j.After
	// with aliases resolved.
	InsertDeps(ctx context.Context, j *queue.Job, after []string) error
}

// Plain reports whether j needs none of Insert's work (no unique key, no
// dependencies), so a store may insert it on its fast path.
func Plain(j *queue.Job) bool { return j.UniqueKey == "" && len(j.After) == 0 }

// Aliases maps the id of a job Insert did not insert, because another job
// held its unique key, to the holder's id, for the rest of one batch or
// import: a later job of it that runs after the job not inserted runs
// after the holder, whose id the caller was given in its place. An id
// that names a job (one inserted later under the same id) is that job. It
// holds one entry per job not inserted; the zero value is ready.
type Aliases struct{ m map[string]string }

// resolve returns after with each id that names no job (no entry in
// states) and was not inserted replaced by its holder's, without naming
// one job twice; ok is false when nothing changed.
func (a *Aliases) resolve(after []string, states map[string]queue.State) (out []string, ok bool) {
	if a == nil || len(a.m) == 0 {
		return after, false
	}
	for _, id := range after {
		if _, found := states[id]; found {
			continue
		}
		if _, aliased := a.m[id]; aliased {
			ok = true
		}
	}
	if !ok {
		return after, false
	}
	out = make([]string, 0, len(after))
	for _, id := range after {
		if _, found := states[id]; !found {
			if holder, aliased := a.m[id]; aliased {
				id = holder
			}
		}
		if !slices.Contains(out, id) {
			out = append(out, id)
		}
	}
	return out, true
}

func (a *Aliases) set(id, holder string) {
	if a == nil {
		return
	}
	if a.m == nil {
		a.m = map[string]string{}
	}
	a.m[id] = holder
}

// Insert stores one job in tx: when a job holds its unique key it sets
// j.ExistingID and inserts nothing (and notes it in aliases, when not
// nil); a job enqueued after others starts in the state the lifecycle
// decides from theirs (DecideAfter), after the holders of those of them
// aliases names that name no job. j itself is left as it was but for
// ExistingID and its state, so that a transaction run again decides
// again.
func Insert(ctx context.Context, tx InsertTx, j *queue.Job, aliases *Aliases) error {
	if j.UniqueKey != "" {
		var since time.Time
		if j.UniqueFor > 0 {
			since = j.CreatedAt.Add(-j.UniqueFor)
		}
		id, found, err := tx.UniqueHolder(ctx, j.UniqueKey, since)
		if err != nil {
			return err
		}
		if found {
			j.ExistingID = id
			aliases.set(j.ID, id)
			return nil
		}
	}
	after := j.After
	if len(after) > 0 {
		states, err := tx.DependencyStates(ctx, after)
		if err != nil {
			return err
		}
		if resolved, ok := aliases.resolve(after, states); ok {
			after = resolved
			if states, err = tx.DependencyStates(ctx, after); err != nil {
				return err
			}
		}
		if lt, ok := tx.(LaterTx); ok {
			// An import may stage the jobs it names later: j waits for
			// them, and the import's commit checks they came (CheckLater).
			for _, id := range after {
				if _, found := states[id]; !found {
					if states == nil {
						states = map[string]queue.State{}
					}
					states[id] = queue.StateWaiting
					lt.Later()
				}
			}
		}
		state, reason, err := queue.DecideAfter(after, states)
		if err != nil {
			return &queue.JobError{ID: j.ID, Err: err}
		}
		j.State, j.Error = state, reason
	}
	inserted, err := tx.Insert(ctx, j)
	if err != nil {
		return err
	}
	if !inserted { // another enqueuer took the key since UniqueHolder looked
		id, found, err := tx.UniqueHolder(ctx, j.UniqueKey, time.Time{})
		if err != nil {
			return err
		}
		if !found {
			return &queue.JobError{ID: j.ID, Err: fmt.Errorf("unique key %q: the job holding it finished meanwhile (%w); enqueue again", j.UniqueKey, queue.ErrConflict)}
		}
		j.ExistingID = id
		aliases.set(j.ID, id)
		return nil
	}
	if len(after) > 0 {
		return tx.InsertDeps(ctx, j, after)
	}
	return nil
}
