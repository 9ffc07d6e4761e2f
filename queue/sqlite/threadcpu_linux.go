package sqlite

import (
	"time"

	"golang.org/x/sys/unix"
)

// threadCPU reads the calling OS thread's CPU clock (user and system
// time). The difference of two readings is one thread's CPU only if the
// goroutine kept its thread in between (runtime.LockOSThread).
func threadCPU() (time.Duration, bool) {
	var ts unix.Timespec
	if unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts) != nil {
		return 0, false
	}
	return time.Duration(ts.Nano()), true
}
