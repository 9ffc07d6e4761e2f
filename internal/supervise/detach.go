package supervise

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/queuectl/queuectl/queue"
)

// StartDetached starts a worker in its own session. The worker writes its
// log itself, rotated (OpenLog); its standard output and error, which carry
// only what it prints outside that log (an error it exits with, a crash
// trace), go to worker-PID.out beside it, which is returned.
func StartDetached(self string, args, env []string, logDir string) (*exec.Cmd, string, error) {
	tmp, err := os.CreateTemp(logDir, "worker-starting-*.out")
	if err != nil {
		return nil, "", fmt.Errorf("create worker output file: %w", err)
	}
	defer tmp.Close()
	devnull, err := os.Open(os.DevNull)
	if err != nil {
		return nil, "", err
	}
	defer devnull.Close()
	c := exec.Command(self, args...)
	c.Env = env // the database is here, not in args (see cmd/queuectl childArgs)
	c.Stdin, c.Stdout, c.Stderr = devnull, tmp, tmp
	c.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := c.Start(); err != nil {
		os.Remove(tmp.Name())
		return nil, "", fmt.Errorf("start worker: %w", err)
	}
	outPath := filepath.Join(logDir, fmt.Sprintf("worker-%d.out", c.Process.Pid))
	if err := os.Rename(tmp.Name(), outPath); err != nil {
		outPath = tmp.Name()
	}
	return c, outPath, nil
}

// WaitRegistered returns once every child has registered in the store, or
// reports the first that died, with the end of its output file (outs, as
// StartDetached returned them).
func WaitRegistered(ctx context.Context, st queue.Store, children []*exec.Cmd, outs []string) error {
	exited := make(chan int, len(children))
	for i, c := range children {
		go func() {
			c.Wait()
			exited <- i
		}()
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		ws, err := st.ListWorkers(ctx)
		if err != nil {
			return err
		}
		registered := map[int]bool{}
		for _, w := range ws {
			registered[w.PID] = true
		}
		all := true
		for _, c := range children {
			all = all && registered[c.Process.Pid]
		}
		if all {
			return nil
		}
		select {
		case i := <-exited:
			return fmt.Errorf("worker %d exited at start: %s", children[i].Process.Pid, tail(outs[i]))
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("workers did not register within 30s; see %s", filepath.Dir(outs[0]))
		}
	}
}

// tail is the last line of the file at path, on one line, without the
// "queuectl: " the worker's own error starts with: the message it goes
// into names the program already.
func tail(path string) string {
	b, _ := os.ReadFile(path)
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	return strings.TrimPrefix(strings.Join(strings.Fields(lines[len(lines)-1]), " "), "queuectl: ")
}
