package queue

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"
)

// Watching jobs from any process: Follow streams a job's output as it is
// printed and Wait blocks until jobs are final. Both are woken by the
// store's JobEvents and poll as a fallback.

// startPoll is how often a follower looks whether a pending job started:
// claims send no event (they are the engine's hot path).
const startPoll = 200 * time.Millisecond

// eventPoll is the fallback when an event was lost.
const eventPoll = time.Second

// FollowParams says what to follow and where to.
type FollowParams struct {
	JobID string
	Out   io.Writer
	// Remainder completes an attempt's output once it ended: given the
	// history row's output and dropped count and how many bytes of the raw
	// output were written live (executor.Remainder).
	Remainder func(output []byte, dropped, seen int64) []byte
	// UntilFinal follows attempt after attempt until the job is final;
	// otherwise Follow ends with the first attempt that ends (or prints
	// the latest one's output when none runs or waits).
	UntilFinal bool
}

// Follow writes a job's output to p.Out as it is printed: a running
// attempt from its start, a pending job's attempt once it starts (and a
// waiting one's, which becomes pending once its dependencies are done). It
// returns the job as it was when following ended.
func Follow(ctx context.Context, st Store, p FollowParams) (*Job, error) {
	events, err := st.JobEvents(ctx)
	if err != nil {
		return nil, err
	}
	printed := 0 // with UntilFinal: attempts whose output was written
	for {
		j, err := st.GetJob(ctx, p.JobID)
		if err != nil {
			return nil, err
		}
		switch {
		case j.State == StateProcessing:
			if p.UntilFinal {
				// Attempts that ended unseen (a short job between two looks).
				if err := writeAttempts(ctx, st, p, printed+1, j.Attempts-1); err != nil {
					return nil, err
				}
			}
			if err := followAttempt(ctx, st, p, events, j.Attempts); err != nil {
				return nil, err
			}
			if !p.UntilFinal {
				return st.GetJob(ctx, p.JobID)
			}
			printed = j.Attempts
			continue
		case p.UntilFinal:
			if err := writeAttempts(ctx, st, p, printed+1, j.Attempts); err != nil {
				return nil, err
			}
			printed = j.Attempts
			if j.State.Finished() {
				return j, nil
			}
		case j.State != StatePending && j.State != StateWaiting:
			// Ended, or failed and waiting for its retry: the latest
			// attempt's output, if it ran.
			return j, writeAttempts(ctx, st, p, j.Attempts, j.Attempts)
		}
		if err := waitEvent(ctx, events, startPoll); err != nil {
			return nil, err
		}
	}
}

// writeAttempts writes the recorded output of attempts from to to.
func writeAttempts(ctx context.Context, st Store, p FollowParams, from, to int) error {
	for n := max(from, 1); n <= to; n++ {
		if err := writeAttempt(ctx, st, p, n, 0); err != nil {
			return err
		}
	}
	return nil
}

// followAttempt writes attempt n's live output until the attempt ends,
// then the rest from its history row.
func followAttempt(ctx context.Context, st Store, p FollowParams, events <-chan struct{}, n int) error {
	var seen int64 // bytes of the attempt's output accounted for
	for {
		l, err := st.LiveOutput(ctx, p.JobID)
		switch {
		case errors.Is(err, ErrNotFound): // nothing saved yet, or ended
		case err != nil:
			return err
		case l.Attempt == n && l.Written > seen:
			if _, err := p.Out.Write(LiveNews(l, seen)); err != nil {
				return err
			}
			seen = l.Written
		}
		j, err := st.GetJob(ctx, p.JobID)
		if err != nil {
			return err
		}
		if j.State != StateProcessing || j.Attempts != n {
			return writeAttempt(ctx, st, p, n, seen)
		}
		if err := waitEvent(ctx, events, eventPoll); err != nil {
			return err
		}
	}
}

// LiveNews is what a follower that accounted for the first seen bytes of an
// attempt's output prints of live output l: the new bytes when l's tail
// still holds them all, else a line saying how many it missed and the tail.
func LiveNews(l *LiveOutput, seen int64) []byte {
	fresh := l.Written - seen
	if fresh <= int64(len(l.Output)) {
		return l.Output[int64(len(l.Output))-fresh:]
	}
	missed := fmt.Sprintf("\n[queuectl: %d bytes of output not shown]\n", fresh-int64(len(l.Output)))
	return append([]byte(missed), l.Output...)
}

// writeAttempt writes what is left of attempt n's recorded output after
// seen bytes were written live.
func writeAttempt(ctx context.Context, st Store, p FollowParams, n int, seen int64) error {
	a, err := st.Output(ctx, p.JobID, n)
	if errors.Is(err, ErrNotFound) {
		return nil // not recorded (yet): a worker that lost its lease, say
	}
	if err != nil {
		return err
	}
	_, err = p.Out.Write(p.Remainder(a.Output, a.Dropped, seen))
	return err
}

// waitEvent waits for an event, at most d.
func waitEvent(ctx context.Context, events <-chan struct{}, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-events:
	case <-t.C:
	}
	return nil
}

// Wait blocks until every named job is final (completed, dead or
// cancelled) and returns them in the order named. An unknown id is an
// ErrNotFound naming it, at once or when the job is deleted meanwhile.
func Wait(ctx context.Context, st Store, ids []string) ([]*Job, error) {
	events, err := st.JobEvents(ctx)
	if err != nil {
		return nil, err
	}
	jobs := make([]*Job, len(ids))
	for {
		done := true
		for i, id := range ids {
			if jobs[i] != nil && jobs[i].State.Finished() {
				continue
			}
			j, err := st.GetJob(ctx, id)
			if errors.Is(err, ErrNotFound) {
				return nil, fmt.Errorf("%w: job %q", ErrNotFound, id)
			}
			if err != nil {
				return nil, err
			}
			jobs[i] = j
			done = done && j.State.Finished()
		}
		if done {
			return jobs, nil
		}
		if err := waitEvent(ctx, events, eventPoll); err != nil {
			return nil, err
		}
	}
}
