package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"os"
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
		l, err := openFileLock(path, filepath.Join(filepath.Dir(path), "queue.db"))
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

// eventually polls cond until it holds, for at most 5 s.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); !cond(); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal(what)
		}
	}
}

// waitFree polls until the lock is free.
func waitFree(t *testing.T, l *fileLock) {
	t.Helper()
	eventually(t, "the lock stayed taken", func() bool { return free(t, l) })
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
	eventually(t, "no flock is pending", func() bool {
		l.mu.Lock()
		defer l.mu.Unlock()
		return l.waiting != nil
	})
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

// abandonedWait returns three handles on one lock: the holder holds it,
// and the waiter has a flock pending that it stopped waiting for.
func abandonedWait(t *testing.T) (holder, waiter, probe *fileLock) {
	t.Helper()
	ls := openLocks(t, 3)
	holder, waiter, probe = ls[0], ls[1], ls[2]
	if err := holder.lock(time.Second); err != nil {
		t.Fatal(err)
	}
	if err := waiter.lock(10 * time.Millisecond); !errors.Is(err, errLockWait) {
		t.Fatalf("lock while held: %v, want errLockWait", err)
	}
	return holder, waiter, probe
}

// A later call takes over the flock an earlier call stopped waiting for.
func TestFileLockTakesOverAPendingWait(t *testing.T) {
	holder, waiter, probe := abandonedWait(t)
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
	holder, waiter, probe := abandonedWait(t)
	if err := waiter.close(); err != nil {
		t.Fatal(err)
	}
	// The pending flock still uses the descriptor: closing it now would
	// let the next file opened take its number.
	var st syscall.Stat_t
	if err := syscall.Fstat(waiter.fd, &st); err != nil {
		t.Fatalf("close with a flock pending closed its descriptor: %v", err)
	}
	if err := waiter.lock(time.Second); err == nil {
		t.Fatal("a closed lock was taken")
	}
	holder.unlock()
	waitFree(t, probe)
}

// newStore opens a store on a new database, closed when the test ends.
func newStore(t *testing.T) (s *Store, path string) {
	t.Helper()
	path = filepath.Join(t.TempDir(), "queue.db")
	s, err := Open(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s, path
}

// probedStore opens a store on a new database and, as another process
// would, a second handle on its write lock.
func probedStore(t *testing.T) (s *Store, probe *fileLock, path string) {
	t.Helper()
	s, path = newStore(t)
	probe, err := openFileLock(path+"-lock", path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { probe.close() })
	return s, probe, path
}

// A write holds the lock from before BEGIN until after COMMIT, and not a
// moment longer.
func TestWriteHoldsTheLockForItsTransaction(t *testing.T) {
	s, probe, _ := probedStore(t)
	inside := false
	err := s.write(context.Background(), true, func(ctx context.Context, tx *sql.Tx) error {
		inside = !free(t, probe)
		_, err := tx.Exec(`INSERT INTO config (key, value) VALUES ('probe', '1')`)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if !inside {
		t.Fatal("the transaction ran without the lock")
	}
	if !free(t, probe) {
		t.Fatal("the lock is still held after the write returned")
	}
}

// Run as root, a side file created beside another user's database is
// given to that user, so the service that owns the database can open it.
func TestSideFilesBelongToTheDatabaseOwner(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: only root creates files another user owns")
	}
	dir := t.TempDir()
	db := filepath.Join(dir, "queue.db")
	if err := os.WriteFile(db, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	const uid, gid = 65534, 65534 // nobody
	if err := os.Chown(db, uid, gid); err != nil {
		t.Fatal(err)
	}
	l, err := openFileLock(db+"-lock", db)
	if err != nil {
		t.Fatal(err)
	}
	defer l.close()
	var st syscall.Stat_t
	if err := syscall.Stat(db+"-lock", &st); err != nil {
		t.Fatal(err)
	}
	if st.Uid != uid || st.Gid != gid {
		t.Fatalf("-lock is owned by %d:%d, want the database's %d:%d", st.Uid, st.Gid, uid, gid)
	}
}

// A begun write transaction is not cancelled with its caller's context:
// the context write hands to fn outlives the caller's cancel, so the
// statements fn runs after it still run (and the driver runs them without
// a goroutine each), and the transaction commits.
func TestWriteStatementsOutliveTheCallersCancel(t *testing.T) {
	s, err := Open(context.Background(), filepath.Join(t.TempDir(), "q.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx, cancel := context.WithCancel(context.Background())
	err = s.write(ctx, false, func(ctx context.Context, tx *sql.Tx) error {
		cancel()
		if ctx.Done() != nil {
			t.Error("fn's context can be cancelled")
		}
		_, err := tx.ExecContext(ctx, `INSERT INTO config (key, value) VALUES ('max-retries', '7')`)
		return err
	})
	if err != nil {
		t.Fatalf("write whose caller cancelled after it began: %v", err)
	}
	var v string
	if err := s.readDB.QueryRow(`SELECT value FROM config WHERE key = 'max-retries'`).Scan(&v); err != nil || v != "7" {
		t.Fatalf("committed value %q, %v; want 7", v, err)
	}
}
