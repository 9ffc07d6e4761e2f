package sqlite

import (
	"os"
	"syscall"
)

// syncData flushes f's data to the device, and its size: fdatasync
// skips only the timestamps, which would cost a journal commit of the
// file system on every call.
func syncData(f *os.File) error {
	for {
		err := syscall.Fdatasync(int(f.Fd()))
		if err != syscall.EINTR {
			return err
		}
	}
}
