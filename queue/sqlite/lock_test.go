package sqlite

import (
	"errors"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// openLocks opens n handles on one lock file: flock orders open files,
// so they exclude each other as separate processes would.
func openLocks(t *testing.T, n int) []*fileLock {
	t.Helper()
	path := filepath.Join(t.TempDir(), "queue.db-lock")
	var ls []*fileLock
	for range n {
		l, err := openFileLock(path)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { l.close() })
		ls = append(ls, l)
	}
	return ls
}

// free reports whether the lock can be taken at once, and releases it.
func free(t *testing.T, l *fileLock) bool {
	t.Helper()
	err := flock(l.fd, syscall.LOCK_EX|syscall.LOCK_NB)
	if err == nil {
		l.unlock()
		return true
	}
	if !errors.Is(err, syscall.EWOULDBLOCK) {
		t.Fatal(err)
	}
	return false
}

// waitFree polls until the lock is free, for at most 5 s.
func waitFree(t *testing.T, l *fileLock) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); !free(t, l); {
		if time.Now().After(deadline) {
			t.Fatal("the lock stayed taken")
		}
		time.Sleep(time.Millisecond)
	}
}

// A waiter sleeps until the holder lets go, then holds the lock itself.
func TestFileLockWaitsForTheHolder(t *testing.T) {
	ls := openLocks(t, 3)
	holder, waiter, probe := ls[0], ls[1], ls[2]
	if err := holder.lock(time.Second); err != nil {
		t.Fatal(err)
	}
	got := make(chan error, 1)
	go func() { got <- waiter.lock(10 * time.Second) }()
	waitPending(t, waiter)
	holder.unlock()
	if err := <-got; err != nil {
		t.Fatalf("waiter: %v", err)
	}
	if free(t, probe) {
		t.Fatal("the waiter was granted the lock but does not hold it")
	}
	waiter.unlock()
	if !free(t, probe) {
		t.Fatal("unlock left the lock taken")
	}
}

// waitPending polls until l has a flock blocked in the kernel.
func waitPending(t *testing.T, l *fileLock) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(time.Millisecond) {
		l.mu.Lock()
		pending := l.waiting != nil
		l.mu.Unlock()
		if pending {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("no flock is pending")
		}
	}
}

// A wait that runs out fails with errLockWait; the flock it left pending
// is released as soon as it is granted, so nobody is locked out by it.
func TestFileLockWaitIsBounded(t *testing.T) {
	ls := openLocks(t, 3)
	holder, waiter, probe := ls[0], ls[1], ls[2]
	if err := holder.lock(time.Second); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if err := waiter.lock(50 * time.Millisecond); !errors.Is(err, errLockWait) {
		t.Fatalf("lock while held: %v, want errLockWait", err)
	}
	if d := time.Since(start); d < 50*time.Millisecond {
		t.Fatalf("gave up after %v, before its wait of 50ms", d)
	}
	holder.unlock()
	waitFree(t, probe)
}

// A later call takes over the flock an earlier call stopped waiting for.
func TestFileLockTakesOverAPendingWait(t *testing.T) {
	ls := openLocks(t, 3)
	holder, waiter, probe := ls[0], ls[1], ls[2]
	if err := holder.lock(time.Second); err != nil {
		t.Fatal(err)
	}
	if err := waiter.lock(10 * time.Millisecond); !errors.Is(err, errLockWait) {
		t.Fatalf("lock while held: %v, want errLockWait", err)
	}
	got := make(chan error, 1)
	go func() { got <- waiter.lock(10 * time.Second) }()
	holder.unlock()
	if err := <-got; err != nil {
		t.Fatalf("second wait: %v", err)
	}
	if free(t, probe) {
		t.Fatal("the second wait was granted the lock but does not hold it")
	}
	waiter.unlock()
	waitFree(t, probe)
}

// Closing with a flock pending neither blocks nor leaves the lock taken
// once the pending flock is granted.
func TestFileLockCloseWithAPendingWait(t *testing.T) {
	ls := openLocks(t, 3)
	holder, waiter, probe := ls[0], ls[1], ls[2]
	if err := holder.lock(time.Second); err != nil {
		t.Fatal(err)
	}
	if err := waiter.lock(10 * time.Millisecond); !errors.Is(err, errLockWait) {
		t.Fatalf("lock while held: %v, want errLockWait", err)
	}
	if err := waiter.close(); err != nil {
		t.Fatal(err)
	}
	if err := waiter.lock(time.Second); err == nil {
		t.Fatal("a closed lock was taken")
	}
	holder.unlock()
	waitFree(t, probe)
}
