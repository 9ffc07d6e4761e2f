package sqlite

import (
	"context"
	"database/sql"
	"path/filepath"
	"runtime"
	"sync"
	"testing"
	"time"
)

// A write transaction's CPU is its own thread's alone, so it is never
// more than the time the lock was held, even while other goroutines keep
// every processor busy and the runtime moves goroutines between threads
// (a transaction that changed threads would count the difference of two
// threads' clocks). Each write is checked on its own.
func TestWriteCPUWithinTimeHeld(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("no thread CPU clock on " + runtime.GOOS)
	}
	ctx := context.Background()
	s, err := Open(ctx, filepath.Join(t.TempDir(), "queue.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()

	stop := make(chan struct{})
	var spin sync.WaitGroup
	for range 4 * runtime.GOMAXPROCS(0) {
		spin.Add(1)
		go func() {
			defer spin.Done()
			for x := 0; ; x++ {
				select {
				case <-stop:
					return
				default:
				}
			}
		}()
	}
	defer func() { close(stop); spin.Wait() }()

	insert := func(ctx context.Context, tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO spin (n) VALUES (1)`)
		return err
	}
	if err := s.write(ctx, false, func(ctx context.Context, tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `CREATE TABLE spin (n INTEGER)`)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	timed := 0
	for deadline, i := time.Now().Add(time.Second), 0; time.Now().Before(deadline); i++ {
		before := s.WriteStats()
		if err := s.write(ctx, false, insert); err != nil {
			t.Fatal(err)
		}
		after := s.WriteStats()
		cpu, held := after.HeldCPU-before.HeldCPU, after.Held-before.Held
		if cpu < 0 || cpu > held+time.Microsecond { // two clocks: allow for their rounding
			t.Fatalf("write %d: its thread's CPU %v while the lock was held %v", i, cpu, held)
		}
		if cpu > 0 {
			timed++
		}
	}
	if timed == 0 {
		t.Fatal("no write counted any CPU")
	}
}
