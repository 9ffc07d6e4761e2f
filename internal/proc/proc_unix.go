//go:build unix

package proc

import (
	"errors"
	"fmt"
	"syscall"
)

// GroupAlive reports whether any process in process group pgid exists
// (kill(-pgid, 0) succeeds or fails with EPERM). On Linux a group whose only
// remaining members are zombies is reported as not alive. pgid must be
// greater than 1; smaller values report false.
func GroupAlive(pgid int) bool {
	if pgid <= 1 || !groupSignalable(pgid) {
		return false
	}
	members, err := GroupMembers(pgid)
	if err != nil {
		// No /proc (or not Linux): trust kill(2).
		return true
	}
	return len(members) > 0
}

// groupSignalable reports whether kill(-pgid, 0) finds at least one process,
// zombies included.
func groupSignalable(pgid int) bool {
	err := syscall.Kill(-pgid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}

// checkGroup rejects process group ids that must never be signalled as a
// group: kill(0, sig) hits the caller's own group, kill(-1, sig) hits every
// process the caller may signal.
func checkGroup(pgid int) error {
	if pgid <= 1 {
		return fmt.Errorf("refusing to signal process group %d", pgid)
	}
	if pgid == syscall.Getpgrp() {
		return fmt.Errorf("refusing to signal own process group %d", pgid)
	}
	return nil
}
