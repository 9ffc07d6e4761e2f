//go:build unix && !linux

package executor

import (
	"os/exec"
	"syscall"
)

// askPidfd asks Start for a pidfd of the child; this platform has none.
func askPidfd(*syscall.SysProcAttr) *int {
	fd := -1
	return &fd
}

// waitExit blocks until cmd's process has exited. This platform has no
// portable way to wait without reaping, so the process is reaped.
func waitExit(cmd *exec.Cmd, _ int) (reaped bool) {
	_ = cmd.Wait()
	return true
}
