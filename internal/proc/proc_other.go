//go:build unix && !linux

package proc

import (
	"errors"
	"fmt"
	"os"
	"syscall"
)

// BootID returns "" on this platform: the boot identifier is unknown.
func BootID() string { return "" }

// StartTime returns 0 for an existing process on this platform (start times
// are not available, so the pid-reuse guard is off). The error wraps
// os.ErrNotExist if there is no such process.
func StartTime(pid int) (uint64, error) {
	if pid <= 0 || errors.Is(syscall.Kill(pid, 0), syscall.ESRCH) {
		return 0, fmt.Errorf("start time: pid %d: %w", pid, os.ErrNotExist)
	}
	return 0, nil
}

// Alive reports whether process pid exists (kill(pid, 0)). A non-zero
// startTime cannot be verified on this platform and makes Alive report false
// (it can only have been recorded elsewhere).
func Alive(pid int, startTime uint64) bool {
	if pid <= 0 || startTime != 0 {
		return false
	}
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}

// GroupMembers is not supported on this platform.
func GroupMembers(pgid int) ([]int, error) {
	return nil, fmt.Errorf("list group members: %w", errors.ErrUnsupported)
}

// KillByEnv is not supported on this platform.
func KillByEnv(entries ...string) (int, error) {
	return 0, fmt.Errorf("kill by environment: %w", errors.ErrUnsupported)
}

// ReadUsage is not supported on this platform.
func ReadUsage(pid int) (Usage, error) {
	return Usage{}, fmt.Errorf("read usage: %w", errors.ErrUnsupported)
}
