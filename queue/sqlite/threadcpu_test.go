package sqlite

import (
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// The CPU time a thread spends between two readings is never more than
// the time that passed, even with goroutines moving between threads all
// the while: a reading whose clock and id came from two threads would
// make a difference of two threads' clocks (11 of 837,199 readings did
// in one second, when a reading was two system calls on whatever thread
// the goroutine was on).
func TestThreadCPUWithinWallTime(t *testing.T) {
	var over, timed atomic.Int64
	var wg sync.WaitGroup
	deadline := time.Now().Add(time.Second)
	for range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			x := 0
			for time.Now().Before(deadline) {
				begun := time.Now()
				m := threadCPU()
				for i := range 2000 {
					x += i
				}
				d, ok := m.since()
				wall := time.Since(begun)
				if ok {
					timed.Add(1)
					if d > wall+time.Microsecond { // two clocks: allow for their rounding
						over.Add(1)
					}
				}
			}
			_ = x
		}()
	}
	wg.Wait()
	if timed.Load() == 0 {
		if runtime.GOOS == "linux" {
			t.Fatal("no reading was timed")
		}
		t.Skip("no thread CPU clock on " + runtime.GOOS)
	}
	if n := over.Load(); n > 0 {
		t.Fatalf("%d of %d readings gave more CPU than time passed", n, timed.Load())
	}
}
