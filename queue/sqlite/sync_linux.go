package sqlite

import (
	"os"
	"syscall"
)

// syncData flushes f's data to the device, as SQLite does on Linux:
// fdatasync skips the timestamps, which would cost a journal commit.
func syncData(f *os.File) error {
	for {
		err := syscall.Fdatasync(int(f.Fd()))
		if err != syscall.EINTR {
			return err
		}
	}
}
