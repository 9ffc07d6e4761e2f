package executor

import (
	"os"
	"os/exec"
	"runtime"
	"syscall"
	"unsafe"
)

// idtype_t values for waitid(2).
const (
	pP_PID   = 1
	pP_PIDFD = 3
)

// askPidfd asks Start for a pidfd of the child: a file descriptor that
// becomes readable when the child exits. It returns where Start stores it
// (-1 when the kernel offers none).
func askPidfd(attr *syscall.SysProcAttr) *int {
	fd := -1
	attr.PidFD = &fd
	return &fd
}

// waitExit returns once cmd's process has exited, leaving it unreaped (a
// zombie) so that its pid, and so its process group id, stays reserved while
// we signal the group. It reports whether the process was reaped anyway,
// which happens only if waitid(2) is unusable. It closes pidfd.
//
// With a pidfd the wait is parked on the runtime's network poller, so no
// thread sits in a blocking system call for the job's whole run. A thread
// blocked that way keeps the runtime's monitor thread waking every 20 µs to
// take its processor back, which cost a worker about a fifth of its own CPU
// on short shell jobs.
func waitExit(cmd *exec.Cmd, pidfd int) (reaped bool) {
	if pidfd >= 0 {
		if pollExit(pidfd) {
			return false
		}
	}
	return blockExit(cmd)
}

// pollExit waits on the poller until the process behind pidfd has exited,
// and closes pidfd. It reports false if the poller could not be used.
func pollExit(pidfd int) bool {
	if err := syscall.SetNonblock(pidfd, true); err != nil {
		syscall.Close(pidfd)
		return false
	}
	f := os.NewFile(uintptr(pidfd), "pidfd")
	defer f.Close()
	rc, err := f.SyscallConn()
	if err != nil {
		return false
	}
	exited := false
	err = rc.Read(func(fd uintptr) bool {
		exited = waitid(pP_PIDFD, fd, syscall.WNOHANG)
		return exited
	})
	return err == nil && exited
}

// blockExit waits for the process in a blocking waitid(2).
func blockExit(cmd *exec.Cmd) (reaped bool) {
	for {
		var info [128]byte // siginfo_t; contents unused
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

// waitid asks, without reaping, whether the process has exited: a zeroed
// siginfo_t comes back with si_signo set (SIGCHLD) once it has. Errors
// other than "not yet" count as exited, so that the caller goes on to reap
// the process and learns the error there.
func waitid(idtype int, id uintptr, options int) (exited bool) {
	for {
		var info [128]byte // siginfo_t; si_signo is its first int32
		_, _, errno := syscall.Syscall6(syscall.SYS_WAITID, uintptr(idtype), id,
			uintptr(unsafe.Pointer(&info)), uintptr(syscall.WEXITED|syscall.WNOWAIT|options), 0, 0)
		signo := *(*int32)(unsafe.Pointer(&info[0]))
		runtime.KeepAlive(&info)
		switch errno {
		case 0:
			return signo != 0
		case syscall.EINTR:
			continue
		case syscall.EAGAIN: // a non-blocking pidfd whose process still runs
			return false
		}
		return true
	}
}
