package sqlite

import (
	"runtime"

	"golang.org/x/sys/unix"
)

// threadCPU reads the calling OS thread's CPU time (user and system) and
// its id. A goroutine can move between threads between two readings;
// the ids tell (threadMark.since). Within one reading it must not: the
// clock of one thread with the id of another would make a difference of
// two threads' clocks, so the goroutine is held on its thread for it.
func threadCPU() threadMark {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	var ts unix.Timespec
	if unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts) != nil {
		return threadMark{}
	}
	return threadMark{tid: unix.Gettid(), ns: ts.Nano()}
}
