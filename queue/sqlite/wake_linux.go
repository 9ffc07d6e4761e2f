package sqlite

import (
	"os"
	"syscall"
)

// watcher reports writes to one file through inotify.
type watcher struct {
	f *os.File
}

func startWatcher(path string, fire func()) (*watcher, error) {
	fd, err := syscall.InotifyInit1(syscall.IN_CLOEXEC | syscall.IN_NONBLOCK)
	if err != nil {
		return nil, err
	}
	if _, err := syscall.InotifyAddWatch(fd, path, syscall.IN_MODIFY|syscall.IN_ATTRIB); err != nil {
		syscall.Close(fd)
		return nil, err
	}
	// A non-blocking descriptor joins Go's poller, so Close unblocks Read.
	f := os.NewFile(uintptr(fd), "inotify")
	go func() {
		buf := make([]byte, 4096)
		for {
			if _, err := f.Read(buf); err != nil {
				return
			}
			fire()
		}
	}()
	return &watcher{f: f}, nil
}

func (w *watcher) close() { w.f.Close() }
