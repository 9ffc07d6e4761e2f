package sqlite

import (
	"sync/atomic"
	"time"
)

// WriteStats are a store's write transactions since it was opened.
type WriteStats struct {
	// Transactions is how many write transactions began (retries of a
	// busy one included).
	Transactions int64
	// Waited is the time writes spent waiting for the write lock: for this
	// process's other writes and for other processes' (SQLite's lock).
	Waited time.Duration
	// Held is the time the write lock was held, from BEGIN IMMEDIATE
	// acquired to COMMIT (or ROLLBACK) done. Every process writing the
	// database shares one lock, so across processes the sum of Held per
	// job bounds the job rate: at most 1 / (Held per job) jobs a second
	// however many cores run them.
	Held time.Duration
	// HeldCPU is the CPU time the holding threads ran over Held (on
	// Linux; elsewhere zero: no clock is read). A transaction keeps its
	// thread from BEGIN to COMMIT and nothing else runs there meanwhile.
	// Held also counts the time a holder was off its CPU: waiting for a
	// core, as it does on a machine whose cores are busy, or for the disk
	// or the Go scheduler. So HeldCPU per transaction is the least a
	// transaction holds the lock on cores like these, and 1 / (HeldCPU
	// per job) the most jobs a second the lock allows (the device flush of
	// a durable write happens after the lock is released).
	HeldCPU time.Duration
}

// WriteStats reports this store's write transactions so far. It is cheap
// and safe to call at any time.
func (s *Store) WriteStats() WriteStats {
	return WriteStats{
		Transactions: s.writeStats.n.Load(),
		Waited:       time.Duration(s.writeStats.waited.Load()),
		Held:         time.Duration(s.writeStats.held.Load()),
		HeldCPU:      time.Duration(s.writeStats.heldCPU.Load()),
	}
}

type writeCounters struct {
	n, waited, held, heldCPU atomic.Int64
}

// add counts one transaction: asked for at asked, begun (lock acquired) at
// begun, committed or rolled back at end, its thread on a core for cpu of
// that.
func (c *writeCounters) add(asked, begun, end time.Time, cpu time.Duration) {
	c.n.Add(1)
	c.waited.Add(int64(begun.Sub(asked)))
	c.held.Add(int64(end.Sub(begun)))
	c.heldCPU.Add(int64(cpu))
}
