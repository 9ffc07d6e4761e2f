package executor

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

// threads counts this process's OS threads.
func threads(t *testing.T) int {
	t.Helper()
	tasks, err := os.ReadDir("/proc/self/task")
	if err != nil {
		t.Fatal(err)
	}
	return len(tasks)
}

// TestWaitsDoNotHoldThreads runs many commands at once and checks that
// waiting for them does not hold an OS thread each: the waits are parked on
// the runtime's poller through pidfds.
func TestWaitsDoNotHoldThreads(t *testing.T) {
	const n = 32
	dir := t.TempDir()
	release := filepath.Join(dir, "release")
	before := threads(t)
	e := New(Config{})
	var started sync.WaitGroup
	started.Add(n)
	var done sync.WaitGroup
	results := make([]Result, n)
	for i := range n {
		done.Add(1)
		go func() {
			defer done.Done()
			results[i] = e.Run(context.Background(), Command{
				Script:  "while [ ! -e " + release + " ]; do sleep 0.05; done",
				OnStart: func(int) { started.Done() },
			})
		}()
	}
	started.Wait()
	// Every command is running; give any thread a blocking wait would
	// take the time to appear, then count.
	deadline := time.Now().Add(500 * time.Millisecond)
	most := 0
	for time.Now().Before(deadline) {
		most = max(most, threads(t)-before)
		time.Sleep(20 * time.Millisecond)
	}
	if err := os.WriteFile(release, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	done.Wait()
	for i, r := range results {
		if r.ExitCode != 0 || r.StartErr != nil {
			t.Fatalf("command %d: exit %d, start error %v", i, r.ExitCode, r.StartErr)
		}
	}
	if most >= n/2 {
		t.Fatalf("%d commands running held %d more threads; the waits block threads", n, most)
	}
}

// TestBlockingWaitFallback checks the path taken without a pidfd: the
// process is waited for without being reaped.
func TestBlockingWaitFallback(t *testing.T) {
	cmd := exec.Command("sh", "-c", "exit 3")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	if reaped := waitExit(cmd, -1); reaped {
		t.Fatal("waitExit reaped the process; it must stay a zombie until the group is swept")
	}
	if err := cmd.Wait(); err == nil || cmd.ProcessState.ExitCode() != 3 {
		t.Fatalf("Wait after waitExit: %v, exit %d", err, cmd.ProcessState.ExitCode())
	}
}
