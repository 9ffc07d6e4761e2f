//go:build unix

package proc

import (
	"errors"
	"fmt"
	"os"
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

// KillOrphanGroup kills (SIGKILL) the process group pgid left behind by a dead
// worker whose group leader (the process with pid == pgid) had start time
// leaderStart (0 = unknown).
//
// If a process with pid == pgid exists and leaderStart != 0 and its start time
// differs from leaderStart, the pid was reused by an unrelated process: nothing
// is sent and KillOrphanGroup returns false. If the leader is gone but the group
// still has members, the group is killed: Linux never reuses a pid while a
// process group with that id exists, so those members are the orphans.
//
// It reports whether a signal was sent (a group left with only zombies is not
// signalled when its leader is gone). It refuses
// (with an error) pgid <= 1 and the caller's own process group.
//
// A small check-then-act window remains: if the group empties and its pid is
// reused by a new group leader between the check and the kill, that group is
// hit. With cyclic pid allocation this needs a full wrap of the pid space in
// that window.
func KillOrphanGroup(pgid int, leaderStart uint64) (bool, error) {
	if err := checkGroup(pgid); err != nil {
		return false, fmt.Errorf("kill orphan group: %w", err)
	}
	start, err := StartTime(pgid)
	switch {
	case err == nil:
		if leaderStart != 0 && start != leaderStart {
			return false, nil // pid reused by someone else
		}
	case errors.Is(err, os.ErrNotExist):
		if !GroupAlive(pgid) {
			return false, nil // nothing left, or only zombies
		}
	default:
		return false, fmt.Errorf("kill orphan group %d: %w", pgid, err)
	}
	if err := syscall.Kill(-pgid, syscall.SIGKILL); err != nil {
		if errors.Is(err, syscall.ESRCH) {
			return false, nil
		}
		return false, fmt.Errorf("kill orphan group %d: %w", pgid, err)
	}
	return true, nil
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
