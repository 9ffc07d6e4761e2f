package supervise

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"slices"
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
	var forwarded []os.Signal
	for left := count; left > 0; {
		select {
		case s := <-sigs:
			forwarded = append(forwarded, s)
			for _, c := range children {
				c.Process.Signal(s)
			}
		case err := <-done:
			left--
			if err != nil && !stoppedBy(err, forwarded) && failed == nil {
				failed = fmt.Errorf("worker: %w", err)
			}
		}
	}
	return failed
}

// stoppedBy reports whether a worker ended by one of the signals forwarded
// to it: a worker still starting up has no handler yet and no job either,
// so the signal's default action ending it is the stop that was asked for.
func stoppedBy(err error, forwarded []os.Signal) bool {
	var exit *exec.ExitError
	if !errors.As(err, &exit) {
		return false
	}
	ws, ok := exit.Sys().(syscall.WaitStatus)
	return ok && ws.Signaled() && slices.Contains(forwarded, os.Signal(ws.Signal()))
}
