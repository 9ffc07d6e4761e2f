package supervise

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"syscall"
)

// RunAttached runs count workers as child processes of this one, each in its
// own process group so that a terminal's Ctrl-C reaches them once, through
// this process, and waits for them.
func RunAttached(self string, args, env []string, count int, stdout, stderr io.Writer) error {
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
	defer signal.Stop(sigs)
	var children []*exec.Cmd
	done := make(chan error, count)
	for range count {
		c := exec.Command(self, args...)
		c.Env = env
		c.Stdout, c.Stderr = stderr, stderr
		c.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		if err := c.Start(); err != nil {
			for _, o := range children {
				o.Process.Signal(syscall.SIGTERM)
			}
			return fmt.Errorf("start worker: %w", err)
		}
		children = append(children, c)
		fmt.Fprintln(stdout, c.Process.Pid)
		go func() { done <- c.Wait() }()
	}
	var failed error
	for left := count; left > 0; {
		select {
		case s := <-sigs:
			for _, c := range children {
				c.Process.Signal(s)
			}
		case err := <-done:
			left--
			if err != nil && failed == nil {
				failed = fmt.Errorf("worker: %w", err)
			}
		}
	}
	return failed
}
