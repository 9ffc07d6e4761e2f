package supervise

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/queuectl/queuectl/internal/proc"
	"github.com/queuectl/queuectl/queue"
	"github.com/queuectl/queuectl/queue/sqlite"
)

// A worker alive after the second signal is killed only when it has not
// been heard from (a hung or stopped one), and with it only the processes
// of its running attempt: a worker that still beats (draining, or running
// an outcome hook) is left to finish, and so is a daemon a finished job of
// the hung worker left on purpose.
func TestKillHungKillsOnlySilentWorkersAndTheirAttempts(t *testing.T) {
	ctx := context.Background()
	st := tempStore(t)
	now := time.Now().UTC().Truncate(time.Millisecond)
	// spawn starts a stand-in process with env, killed at the end.
	spawn := func(env ...string) (int, uint64) {
		cmd := exec.Command("sleep", "60")
		cmd.Env = append(os.Environ(), env...)
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		return reaped(t, cmd)
	}
	worker := func(id string, heard time.Time) *queue.WorkerInfo {
		pid, start := spawn()
		w := &queue.WorkerInfo{ID: id, PID: pid, Host: "h", BootID: proc.BootID(), ProcStart: start,
			StartedAt: now.Add(-time.Hour), HeartbeatAt: heard}
		if err := st.RegisterWorker(ctx, w); err != nil {
			t.Fatal(err)
		}
		return w
	}
	hung, busy := worker("hung", now.Add(-time.Minute)), worker("busy", now.Add(-time.Second))
	j, err := queue.NewJob{ID: "j", Command: "sleep 60"}.Resolve(queue.DefaultSettings(), now.Add(-time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	if err := st.InsertJobs(ctx, []*queue.Job{j}); err != nil {
		t.Fatal(err)
	}
	if got, err := st.ClaimJobs(ctx, queue.ClaimParams{Worker: "hung", Limit: 1, Now: now, LeaseUntil: now.Add(time.Hour)}); err != nil || len(got) != 1 {
		t.Fatalf("claim: %v, %v", got, err)
	}
	attempt, _ := spawn("QUEUECTL_JOB_ID=j", "QUEUECTL_ATTEMPT=1", "QUEUECTL_WORKER=hung")
	daemon, _ := spawn("QUEUECTL_JOB_ID=done-long-ago", "QUEUECTL_ATTEMPT=1", "QUEUECTL_WORKER=hung")

	var stderr bytes.Buffer
	// The first look notes each heartbeat; the second finds the silent
	// one's unmoved (for no time at all, here).
	watch := hungWatch{beats: map[string]beat{}}
	look := func() {
		t.Helper()
		err := watch.killHung(ctx, st, []*queue.WorkerInfo{hung, busy}, StopParams{Now: func() time.Time { return now }, Stderr: &stderr})
		if err != nil {
			t.Fatal(err)
		}
	}
	look()
	if syscall.Kill(hung.PID, 0) != nil || stderr.Len() > 0 {
		t.Fatalf("killed at the first look, before its heartbeat was seen not to move: %q", stderr.String())
	}
	look()
	gone := func(pid int) bool {
		deadline := time.Now().Add(10 * time.Second)
		for time.Now().Before(deadline) {
			if syscall.Kill(pid, 0) != nil {
				return true
			}
			time.Sleep(10 * time.Millisecond)
		}
		return false
	}
	if !gone(hung.PID) || !gone(attempt) {
		t.Fatalf("the silent worker and its attempt were not killed; stderr %q", stderr.String())
	}
	if syscall.Kill(busy.PID, 0) != nil || syscall.Kill(daemon, 0) != nil {
		t.Fatalf("killed a worker still heard from, or a finished job's daemon; stderr %q", stderr.String())
	}
	if want := "killed 1 process(es) of its running jobs"; !bytes.Contains(stderr.Bytes(), []byte(want)) {
		t.Fatalf("stderr %q, want it to say %q", stderr.String(), want)
	}
}

// failingWorkers is a store whose ListWorkers fails after its first call.
type failingWorkers struct {
	queue.Store
	calls int
}

func (f *failingWorkers) ListWorkers(ctx context.Context) ([]*queue.WorkerInfo, error) {
	if f.calls++; f.calls > 1 {
		return nil, errors.New("connection reset")
	}
	return f.Store.ListWorkers(ctx)
}

// When the store cannot be read after the second signal, whether a worker
// is hung cannot be told: Stop says so and waits for the worker, as it did
// before it killed hung ones, rather than failing while it still drains.
func TestStopWaitsWhenItCannotTellHung(t *testing.T) {
	ctx := context.Background()
	st := tempStore(t)
	// A worker that ignores both signals and ends on its own a little later.
	cmd := exec.Command("sh", "-c", `trap "" TERM; echo ready; sleep 1`)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	if line, err := bufio.NewReader(out).ReadString('\n'); err != nil || line != "ready\n" { // its trap is set
		t.Fatalf("stand-in worker: %q, %v", line, err)
	}
	pid, start := reaped(t, cmd)
	host, _ := os.Hostname()
	now := time.Now()
	if err := st.RegisterWorker(ctx, &queue.WorkerInfo{ID: "w", PID: pid, Host: host, BootID: proc.BootID(),
		ProcStart: start, StartedAt: now, HeartbeatAt: now}); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	err = Stop(ctx, &failingWorkers{Store: st}, StopParams{Host: host, Timeout: time.Millisecond, Stdout: &stdout, Stderr: &stderr})
	if err != nil || stdout.String() != "stopped 1 worker(s)\n" {
		t.Fatalf("stop: %v, stdout %q, stderr %q; want the worker waited for", err, stdout.String(), stderr.String())
	}
	if want := "cannot tell whether a worker is hung (connection reset)"; !bytes.Contains(stderr.Bytes(), []byte(want)) {
		t.Fatalf("stderr %q, want %q", stderr.String(), want)
	}
}

// tempStore is a store on a new SQLite file, closed at the test's end.
func tempStore(t *testing.T) *sqlite.Store {
	t.Helper()
	st, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "q.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// reaped watches a started stand-in process: it is reaped as soon as it
// ends (so that it is gone, not a zombie) and killed at the test's end. It
// returns its pid and start-time token.
func reaped(t *testing.T, cmd *exec.Cmd) (int, uint64) {
	t.Helper()
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	t.Cleanup(func() { cmd.Process.Kill(); <-done })
	start, err := proc.StartTime(cmd.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	return cmd.Process.Pid, start
}
