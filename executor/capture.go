package executor

import (
	"fmt"
	"sync"
)

// capture is an io.Writer that keeps at most limit bytes of what is written
// to it: the first half (head) and the most recent half (tail, a ring
// buffer). It never blocks and never fails, so a command printing without
// bound keeps running. Memory use is bounded by limit.
type capture struct {
	mu      sync.Mutex
	headCap int
	tailCap int
	head    []byte
	tail    []byte // ring; once len(tail) == tailCap the oldest byte is at pos
	pos     int
	total   int64
}

func newCapture(limit int64) *capture {
	if limit < 0 {
		limit = 0
	}
	h := int(limit / 2)
	return &capture{headCap: h, tailCap: int(limit) - h}
}

// Write implements io.Writer; it always reports len(p), nil.
func (c *capture) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := len(p)
	c.total += int64(n)
	if room := c.headCap - len(c.head); room > 0 {
		k := min(room, len(p))
		c.head = appendCapped(c.head, p[:k], c.headCap)
		p = p[k:]
	}
	if len(p) == 0 || c.tailCap == 0 {
		return n, nil
	}
	if len(p) >= c.tailCap {
		// Only the last tailCap bytes of p survive.
		c.tail = appendCapped(c.tail[:0], p[len(p)-c.tailCap:], c.tailCap)
		c.pos = 0
		return n, nil
	}
	if room := c.tailCap - len(c.tail); room > 0 {
		k := min(room, len(p))
		c.tail = appendCapped(c.tail, p[:k], c.tailCap)
		p = p[k:]
	}
	for len(p) > 0 {
		k := copy(c.tail[c.pos:], p)
		c.pos = (c.pos + k) % c.tailCap
		p = p[k:]
	}
	return n, nil
}

// appendCapped appends p to buf, never growing buf's capacity beyond limit
// (len(buf)+len(p) must not exceed limit).
func appendCapped(buf, p []byte, limit int) []byte {
	if need := len(buf) + len(p); need > cap(buf) {
		c := min(max(2*cap(buf), need, 4096), limit)
		nb := make([]byte, len(buf), c)
		copy(nb, buf)
		buf = nb
	}
	return append(buf, p...)
}

// Dropped returns how many bytes were discarded.
func (c *capture) Dropped() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.dropped()
}

func (c *capture) dropped() int64 {
	return c.total - int64(len(c.head)) - int64(len(c.tail))
}

// droppedMarker is inserted between head and tail when bytes were dropped.
func droppedMarker(n int64) string {
	return fmt.Sprintf("\n[queuectl: %d bytes of output dropped]\n", n)
}

// Bytes returns the kept output: head, then the marker line if anything was
// dropped, then the tail in write order. It returns a fresh slice.
func (c *capture) Bytes() []byte {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.bytes()
}

// Snapshot returns the kept output so far (as Bytes) and how many bytes
// were written in all, read together.
func (c *capture) Snapshot() ([]byte, int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.bytes(), c.total
}

func (c *capture) bytes() []byte {
	if c.total == 0 {
		return nil
	}
	var marker string
	if d := c.dropped(); d > 0 {
		marker = droppedMarker(d)
	}
	out := make([]byte, 0, len(c.head)+len(marker)+len(c.tail))
	out = append(out, c.head...)
	out = append(out, marker...)
	if len(c.tail) == c.tailCap {
		out = append(out, c.tail[c.pos:]...)
		out = append(out, c.tail[:c.pos]...)
	} else {
		out = append(out, c.tail...)
	}
	return out
}

// Remainder returns what completes a reader's copy of a run's output: the
// reader has seen the first seen bytes of the raw output (through
// Command.Tee), and output and dropped are the run's capped Output and
// Dropped. Without a cap it is the rest of the output; with one it is
// what is left of the kept head, a marker line for the bytes neither the
// reader saw nor the cap kept, and the unseen part of the kept tail.
func Remainder(output []byte, dropped, seen int64) []byte {
	if seen < 0 {
		seen = 0
	}
	if dropped <= 0 {
		return output[min(seen, int64(len(output))):]
	}
	marker := droppedMarker(dropped)
	limit := int64(len(output) - len(marker))
	if limit < 0 {
		return nil // pruned after the run: nothing is left to show
	}
	head := limit / 2
	tail := output[head+int64(len(marker)):]
	tailStart := limit + dropped - int64(len(tail)) // in the raw output
	var out []byte
	if seen < head {
		out = append(out, output[seen:head]...)
	}
	if gap := tailStart - max(seen, head); gap > 0 {
		out = append(out, droppedMarker(gap)...)
	}
	return append(out, tail[max(0, min(seen-tailStart, int64(len(tail)))):]...)
}
