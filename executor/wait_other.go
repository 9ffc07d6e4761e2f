//go:build unix && !linux

package executor

import "os/exec"

// waitExit blocks until cmd's process has exited. This platform has no
// portable way to wait without reaping, so the process is reaped.
func waitExit(cmd *exec.Cmd) (reaped bool) {
	_ = cmd.Wait()
	return true
}
