package supervise

import (
	"bytes"
	"context"
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
	st, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "q.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	now := time.Now().UTC().Truncate(time.Millisecond)
	// spawn starts a stand-in process with env, killed at the end.
	spawn := func(env ...string) (int, uint64) {
		cmd := exec.Command("sleep", "60")
		cmd.Env = append(os.Environ(), env...)
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		reaped := make(chan struct{})
		go func() { cmd.Wait(); close(reaped) }() // reap it when killed, so that it is gone, not a zombie
		t.Cleanup(func() { cmd.Process.Kill(); <-reaped })
		start, err := proc.StartTime(cmd.Process.Pid)
		if err != nil {
			t.Fatal(err)
		}
		return cmd.Process.Pid, start
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
	err = killHung(ctx, st, []*queue.WorkerInfo{hung, busy}, StopParams{Now: func() time.Time { return now }, Stderr: &stderr})
	if err != nil {
		t.Fatal(err)
	}
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
