// Package fakeclock owns the clock tests move by hand: it stands in for the
// wall clock of an engine, a scheduler or a server, and is safe to read
// from their goroutines while the test moves it.
package fakeclock

import (
	"sync"
	"time"
)

// Clock is a time that moves only when Set or Advance moves it.
type Clock struct {
	mu  sync.Mutex
	now time.Time
}

// New returns a clock at t.
func New(t time.Time) *Clock { return &Clock{now: t} }

// Now returns the clock's time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Set puts the clock at t.
func (c *Clock) Set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = t
}

// Advance moves the clock on by d and returns its new time.
func (c *Clock) Advance(d time.Duration) time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
	return c.now
}
