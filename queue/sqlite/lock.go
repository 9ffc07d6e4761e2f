package sqlite

import (
	"errors"
	"os"
	"sync"
	"syscall"
	"time"
)

// fileLock is a lock shared by every process writing one database: an
// exclusive flock on a "-lock" file beside it, taken around each write
// transaction. SQLite's own write lock cannot be waited for, only polled,
// so without it a process whose write finds the lock taken retries on a
// timer: it burns CPU and, on a machine with fewer cores than writers,
// takes time slices from the holder it waits for. A process blocked in
// flock sleeps until the holder releases it.
//
// It only orders the processes that use it; SQLite's lock still decides
// (write keeps retrying a busy BEGIN for the rare writer that does not
// take it: the sqlite3 shell, an older queuectl, a checkpoint on close).
// The kernel releases it when its holder dies.
type fileLock struct {
	f  *os.File
	fd int // f's descriptor, read once (File.Fd is not safe beside Close)

	mu      sync.Mutex
	waiting *flockWait // a blocking flock in progress, or nil
	closed  bool       // close was called; the last flock closes f
}

// flockWait is one blocking flock, run on its own goroutine so that the
// caller can stop waiting for it.
type flockWait struct {
	done   chan struct{} // closed once flock returned
	err    error         // set before done is closed
	wanted bool          // guarded by fileLock.mu: a caller takes the lock once granted
}

// errLockWait is lock's error when the wait ran out.
var errLockWait = errors.New("write lock still held by another process")

// openFileLock opens (creating it readable by its owner only) the lock
// file at path, beside the database db.
func openFileLock(path, db string) (*fileLock, error) {
	f, err := openSideFile(path, db, os.O_RDWR)
	if err != nil {
		return nil, err
	}
	return &fileLock{f: f, fd: int(f.Fd())}, nil
}

// lock takes the lock, waiting at most wait. Calls must not overlap (the
// store's write mutex orders them). A wait that runs out leaves its flock
// pending: a later call picks it up, and if none does, the lock is
// released as soon as it is granted.
func (l *fileLock) lock(wait time.Duration) error {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return errors.New("write lock is closed")
	}
	w := l.waiting
	if w == nil {
		err := flock(l.fd, syscall.LOCK_EX|syscall.LOCK_NB)
		if !errors.Is(err, syscall.EWOULDBLOCK) {
			l.mu.Unlock()
			return err
		}
		w = &flockWait{done: make(chan struct{})}
		l.waiting = w
		go l.block(w)
	}
	w.wanted = true
	l.mu.Unlock()

	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-w.done:
		return w.err
	case <-t.C:
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	select {
	case <-w.done: // granted meanwhile: it is ours
		return w.err
	default:
		w.wanted = false
		return errLockWait
	}
}

// block waits in flock for w.
func (l *fileLock) block(w *flockWait) {
	err := flock(l.fd, syscall.LOCK_EX)
	l.mu.Lock()
	defer l.mu.Unlock()
	l.waiting = nil
	switch {
	case l.closed:
		l.f.Close() // releases the lock
		err = errLockWait
	case err == nil && !w.wanted:
		err = flock(l.fd, syscall.LOCK_UN)
		if err == nil {
			err = errLockWait
		}
	}
	w.err = err
	close(w.done)
}

func (l *fileLock) unlock() error { return flock(l.fd, syscall.LOCK_UN) }

// close releases the lock and closes its file; a flock still pending
// closes it once it returns (so its descriptor is not reused meanwhile).
// Until then that flock keeps the file, a goroutine and a thread: if the
// process holding the lock never lets go, for the rest of this process.
func (l *fileLock) close() error {
	if l == nil {
		return nil // the store runs without the lock file
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return nil
	}
	l.closed = true
	if l.waiting != nil {
		l.waiting.wanted = false
		return nil
	}
	return l.f.Close()
}

func flock(fd, how int) error {
	for {
		err := syscall.Flock(fd, how)
		if err != syscall.EINTR {
			return err
		}
	}
}
