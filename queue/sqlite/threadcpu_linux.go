package sqlite

import "golang.org/x/sys/unix"

// threadCPU reads the calling OS thread's CPU time (user and system) and
// its id. A goroutine can move between threads between two readings;
// the ids tell (threadMark.since).
func threadCPU() threadMark {
	var ts unix.Timespec
	if unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts) != nil {
		return threadMark{}
	}
	return threadMark{tid: unix.Gettid(), ns: ts.Nano()}
}
