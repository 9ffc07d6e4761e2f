package executor

import (
	"os/exec"
	"runtime"
	"syscall"
	"unsafe"
)

const pP_PID = 1 // idtype_t P_PID for waitid(2)

// waitExit blocks until cmd's process has exited, leaving it unreaped (a
// zombie) so that its pid, and so its process group id, stays reserved while
// we signal the group. It reports whether the process was reaped anyway,
// which happens only if waitid(2) is unusable.
func waitExit(cmd *exec.Cmd) (reaped bool) {
	var info [128]byte // siginfo_t; contents unused
	for {
		_, _, errno := syscall.Syscall6(syscall.SYS_WAITID, pP_PID, uintptr(cmd.Process.Pid),
			uintptr(unsafe.Pointer(&info)), syscall.WEXITED|syscall.WNOWAIT, 0, 0)
		runtime.KeepAlive(&info)
		if errno == syscall.EINTR {
			continue
		}
		if errno == 0 {
			return false
		}
		_ = cmd.Wait()
		return true
	}
}
