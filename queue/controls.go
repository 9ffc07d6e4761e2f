package queue

import (
	"fmt"
	"strconv"
	"time"

	"github.com/queuectl/queuectl/internal/duration"
)

// QueueControl is what operators steer on one queue at run time: a pause
// and the global limits every claim enforces, on every host. The zero value
// (no stored row) is a queue that runs freely.
type QueueControl struct {
	Name   string
	Paused bool
	// MaxRunning bounds the jobs of the queue processing at once, across
	// every worker and host; 0 is no limit.
	MaxRunning int
	// Rate bounds how many jobs of the queue may start per period.
	Rate RateLimit
}

// Limited reports whether a claim must count the queue's running jobs or
// recent starts before it takes any.
func (c QueueControl) Limited() bool { return c.MaxRunning > 0 || c.Rate.N > 0 }

// Steered reports whether the control changes what a claim may take.
func (c QueueControl) Steered() bool { return c.Paused || c.Limited() }

// Allowance is how many jobs of the queue one claim may start, given how
// many of its jobs are processing now and how many started within the rate
// period before now. -1 means no bound. It is the one place that decides
// it; stores count and obey.
func (c QueueControl) Allowance(running, recentStarts int) int {
	if c.Paused {
		return 0
	}
	n := -1
	if c.MaxRunning > 0 {
		n = max(0, c.MaxRunning-running)
	}
	if c.Rate.N > 0 {
		r := max(0, c.Rate.N-recentStarts)
		if n < 0 || r < n {
			n = r
		}
	}
	return n
}

// RateLimit is at most N starts in any window of length Per. The zero
// value is no limit.
type RateLimit struct {
	N   int
	Per time.Duration
}

// String renders the limit as ParseRateLimit reads it ("10/s", "100/m",
// "5/2m"); "" for none.
func (r RateLimit) String() string {
	if r.N <= 0 {
		return ""
	}
	unit := map[time.Duration]string{time.Second: "s", time.Minute: "m", time.Hour: "h"}[r.Per]
	if unit == "" {
		unit = r.Per.String()
	}
	return strconv.Itoa(r.N) + "/" + unit
}

// ParseRateLimit reads "N/s", "N/m", "N/h" or "N/DURATION" (for example
// "10/s", "100/m", "5/30s"). "0" or "" is no limit.
func ParseRateLimit(s string) (RateLimit, error) {
	n, per, err := duration.ParseRate(s)
	if err != nil {
		return RateLimit{}, invalidError{err}
	}
	return RateLimit{N: n, Per: per}, nil
}

// MaxRunningLimit is the largest max running a queue may have.
const MaxRunningLimit = 1_000_000

// ControlUpdate changes the controls of queues; nil fields stay as they are.
type ControlUpdate struct {
	Names      []string
	Paused     *bool
	MaxRunning *int
	Rate       *RateLimit
}

// Check validates the update.
func (u ControlUpdate) Check() error {
	if len(u.Names) == 0 {
		return fmt.Errorf("%w: no queue named", ErrInvalid)
	}
	for _, n := range u.Names {
		if err := CheckName("queue name", n); err != nil {
			return err
		}
	}
	if u.MaxRunning != nil && (*u.MaxRunning < 0 || *u.MaxRunning > MaxRunningLimit) {
		return fmt.Errorf("%w: max running %d: must be 0 (no limit) to %d", ErrInvalid, *u.MaxRunning, MaxRunningLimit)
	}
	if u.Rate != nil && u.Rate.N < 0 {
		return fmt.Errorf("%w: rate limit %d: must not be negative", ErrInvalid, u.Rate.N)
	}
	return nil
}

// Apply returns c changed by u.
func (u ControlUpdate) Apply(c QueueControl) QueueControl {
	if u.Paused != nil {
		c.Paused = *u.Paused
	}
	if u.MaxRunning != nil {
		c.MaxRunning = *u.MaxRunning
	}
	if u.Rate != nil {
		c.Rate = *u.Rate
	}
	return c
}

// SteeredIn returns the controls that change what a claim of the given
// queues (every queue when empty) may take.
func SteeredIn(cs []QueueControl, queues []string) []QueueControl {
	var out []QueueControl
	for _, c := range cs {
		if !c.Steered() {
			continue
		}
		if len(queues) > 0 && !contains(queues, c.Name) {
			continue
		}
		out = append(out, c)
	}
	return out
}

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}
