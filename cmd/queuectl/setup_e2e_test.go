package main

import (
	"bufio"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// setUpCommands are the command lines of the README's "Set up" section, one
// per shell block.
func setUpCommands(t *testing.T) []string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(b), "\n## Set up\n")
	if !ok {
		t.Fatal("README.md has no Set up section")
	}
	section, _, _ = strings.Cut(section, "\n## ")
	var cmds []string
	for _, block := range strings.Split(section, "```sh\n")[1:] {
		body, _, _ := strings.Cut(block, "```")
		for _, line := range strings.Split(strings.TrimSpace(body), "\n") {
			cmds = append(cmds, line)
		}
	}
	return cmds
}

// TestE2EReadmeSetUp runs the README's first set-up command as written, on
// a machine where queuectl was never installed (an empty GOPATH and home):
// it must install queuectl on the PATH, queue a job and run it in a
// foreground worker, which Ctrl-C stops. The set-up stays two commands.
func TestE2EReadmeSetUp(t *testing.T) {
	cmds := setUpCommands(t)
	if len(cmds) != 2 || cmds[1] != "go test -race ./..." {
		t.Fatalf("the README's set-up is not two commands, install-and-run then the tests: %q", cmds)
	}
	home, gopath := t.TempDir(), t.TempDir()
	goenv := func(name string) string {
		out, err := exec.Command("go", "env", name).Output()
		if err != nil {
			t.Fatal(err)
		}
		return strings.TrimSpace(string(out))
	}
	env := []string{"HOME=" + home, "GOPATH=" + gopath, "GOBIN=",
		// The module and build caches of this machine: a fresh machine
		// would download and compile the same things, only slower.
		"GOMODCACHE=" + goenv("GOMODCACHE"), "GOCACHE=" + goenv("GOCACHE"), "GOFLAGS=" + goenv("GOFLAGS")}
	for _, kv := range os.Environ() {
		if k, _, _ := strings.Cut(kv, "="); !strings.HasPrefix(k, "QUEUECTL_") && !strings.HasPrefix(k, "GO") && k != "HOME" {
			env = append(env, kv)
		}
	}
	sh := exec.Command("bash", "-c", cmds[0])
	sh.Dir = filepath.Join("..", "..")
	sh.Env = env
	sh.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	stderr, err := sh.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := sh.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { syscall.Kill(-sh.Process.Pid, syscall.SIGKILL) })
	finished := make(chan struct{})
	var mu sync.Mutex
	var lines strings.Builder
	log := func() string {
		mu.Lock()
		defer mu.Unlock()
		return lines.String()
	}
	go func() {
		sc := bufio.NewScanner(stderr)
		closed := false
		for sc.Scan() {
			mu.Lock()
			lines.WriteString(sc.Text() + "\n")
			mu.Unlock()
			if !closed && strings.Contains(sc.Text(), `"message":"job finished"`) {
				close(finished)
				closed = true
			}
		}
		io.Copy(io.Discard, stderr)
	}()
	done := make(chan error, 1)
	go func() { done <- sh.Wait() }()
	select {
	case <-finished:
	case err := <-done:
		t.Fatalf("the set-up command ended before its worker finished the job: %v\n%s", err, log())
	case <-time.After(4 * time.Minute):
		t.Fatal("the set-up command's worker never finished the job")
	}
	syscall.Kill(-sh.Process.Pid, syscall.SIGINT) // Ctrl-C in that terminal
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("the set-up command after Ctrl-C: %v\n%s", err, log())
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the foreground worker did not stop on Ctrl-C")
	}

	bin := filepath.Join(gopath, "bin", "queuectl")
	list := exec.Command(bin, "list", "--json")
	list.Env = env
	out, err := list.Output()
	if err != nil {
		t.Fatalf("queuectl was not installed where the README's PATH looks: %v", err)
	}
	var jobs []struct{ Command, State string }
	if err := json.Unmarshal(out, &jobs); err != nil {
		t.Fatal(err)
	}
	if len(jobs) != 1 || jobs[0].Command != "echo hello from queuectl" || jobs[0].State != "completed" {
		t.Fatalf("jobs in ~/.queuectl after the set-up: %s", out)
	}
}
