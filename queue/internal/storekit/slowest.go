package storekit

import (
	"context"
	"sort"
	"time"

	"github.com/queuectl/queuectl/queue"
)

// SlowestSource is what Slowest reads from a store.
type SlowestSource interface {
	// HourMaxima returns, for each hour slot of the run-time histograms
	// from hour on, its greatest run time in microseconds (never less than
	// that of any attempt it still counts).
	HourMaxima(ctx context.Context, hour time.Time) ([]SlotMax, error)
	// Longest returns, for each minute from from until to, the limit
	// longest attempts that ended in it and ran at least atLeast
	// microseconds: an index range per minute.
	Longest(ctx context.Context, from, to time.Time, atLeast int64, limit int) ([]queue.AttemptStat, error)
}

// SlotMax is one hour slot and its greatest run time in microseconds.
type SlotMax struct {
	Slot time.Time
	Max  int64
}

// Slowest finds the p.Limit longest attempts that ended in the minute that
// holds p.Since or later, longest first, without reading every attempt of
// the window: the minutes before the window's first whole hour, then its
// hours, the one with the longest attempt first, until an hour's longest
// is shorter than all the attempts found. Each minute read is one index
// range of at most p.Limit entries.
func Slowest(ctx context.Context, src SlowestSource, p queue.SlowestParams) ([]queue.AttemptStat, error) {
	if p.Limit <= 0 {
		return nil, nil
	}
	start := queue.RunTimeParams{Since: p.Since}.Start()
	hours := queue.RunTimeParams{Since: p.Since}.Hours()
	top := slowest{limit: p.Limit}
	if err := top.read(ctx, src, start, hours); err != nil {
		return nil, err
	}
	maxima, err := src.HourMaxima(ctx, hours)
	if err != nil {
		return nil, err
	}
	sort.SliceStable(maxima, func(i, j int) bool { return maxima[i].Max > maxima[j].Max })
	for _, h := range maxima {
		if top.full() && h.Max < top.least() {
			break
		}
		if err := top.read(ctx, src, h.Slot, h.Slot.Add(queue.HourSlot)); err != nil {
			return nil, err
		}
	}
	return top.list, nil
}

// slowest is the longest attempts found so far, longest first.
type slowest struct {
	list  []queue.AttemptStat
	limit int
}

func (s *slowest) full() bool { return len(s.list) >= s.limit }

// least is the shortest run time of the list, in microseconds.
func (s *slowest) least() int64 { return s.list[len(s.list)-1].Duration.Microseconds() }

// read adds the longest attempts of the minutes from from until to.
func (s *slowest) read(ctx context.Context, src SlowestSource, from, to time.Time) error {
	if !from.Before(to) {
		return nil
	}
	atLeast := int64(-1 << 63)
	if s.full() {
		atLeast = s.least()
	}
	found, err := src.Longest(ctx, from, to, atLeast, s.limit)
	if err != nil {
		return err
	}
	s.list = append(s.list, found...)
	sort.SliceStable(s.list, func(i, j int) bool {
		a, b := s.list[i], s.list[j]
		if a.Duration != b.Duration {
			return a.Duration > b.Duration
		}
		return a.FinishedAt.Before(b.FinishedAt) || a.FinishedAt.Equal(b.FinishedAt) && a.JobID < b.JobID
	})
	s.list = s.list[:min(len(s.list), s.limit)]
	return nil
}
