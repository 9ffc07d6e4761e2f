package proc

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// waitFor polls cond until it holds or the deadline passes.
func waitFor(t *testing.T, what string, d time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", d, what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestBootID(t *testing.T) {
	id := BootID()
	boot, ns, _ := strings.Cut(id, "/")
	if len(boot) != 36 || strings.TrimSpace(id) != id {
		t.Fatalf("BootID() = %q, want a trimmed 36-character uuid first", id)
	}
	self, err := os.Readlink("/proc/self/ns/pid")
	if err != nil {
		t.Fatal(err)
	}
	want := "" // the host's own pid namespace is not named
	if self != initPIDNamespace {
		want = self
	}
	if ns != want {
		t.Fatalf("BootID() = %q names pid namespace %q, want %q (this process is in %s)", id, ns, want, self)
	}
	if again := BootID(); again != id {
		t.Fatalf("BootID changed: %q then %q", id, again)
	}
}

func TestStartTimeSelf(t *testing.T) {
	a, err := StartTime(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if a == 0 {
		t.Fatal("StartTime(self) = 0")
	}
	b, err := StartTime(os.Getpid())
	if err != nil || b != a {
		t.Fatalf("StartTime(self) not stable: %d then %d (%v)", a, b, err)
	}
	if !Alive(os.Getpid(), 0) || !Alive(os.Getpid(), a) {
		t.Fatal("Alive(self) = false")
	}
	if Alive(os.Getpid(), a+1) {
		t.Fatal("Alive(self, wrong start time) = true")
	}
}

func TestInvalidPids(t *testing.T) {
	for _, pid := range []int{0, -1} {
		if _, err := StartTime(pid); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("StartTime(%d) error = %v, want ErrNotExist", pid, err)
		}
		if Alive(pid, 0) {
			t.Errorf("Alive(%d) = true", pid)
		}
		if GroupAlive(pid) {
			t.Errorf("GroupAlive(%d) = true", pid)
		}
	}
	if GroupAlive(1) {
		t.Error("GroupAlive(1) = true; kill(-1, 0) must never be used")
	}
}

func TestExitedChild(t *testing.T) {
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	pid := cmd.Process.Pid
	if Alive(pid, 0) {
		t.Fatalf("Alive(reaped child %d) = true", pid)
	}
	if _, err := StartTime(pid); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("StartTime(reaped child) error = %v, want ErrNotExist", err)
	}
}

func TestZombieIsNotAlive(t *testing.T) {
	cmd := exec.Command("sh", "-c", "exit 0")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pid := cmd.Process.Pid
	defer cmd.Wait()
	waitFor(t, "child to become a zombie", 5*time.Second, func() bool {
		st, err := readStat(pid)
		return err == nil && st.state == 'Z'
	})
	if Alive(pid, 0) {
		t.Fatal("Alive(zombie) = true")
	}
	if _, err := StartTime(pid); err != nil {
		t.Fatalf("StartTime(zombie): %v", err)
	}
}

func TestParseStatOddComm(t *testing.T) {
	line := "4242 (a) b (c) S) R 17 4242 4242 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 1 0 987654 1000 100 18446744073709551615\n"
	st, err := parseStat([]byte(line))
	if err != nil {
		t.Fatal(err)
	}
	if st.comm != "a) b (c) S" || st.state != 'R' || st.ppid != 17 || st.pgrp != 4242 || st.start != 987654 ||
		st.utime != 1 || st.stime != 2 || st.vsize != 1000 || st.rss != 100 {
		t.Fatalf("parseStat = %+v", st)
	}
	for _, bad := range []string{"", "1 (x", "1 (x) S 1 2", "1 (x) S a 1 1 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 5 1 1"} {
		if _, err := parseStat([]byte(bad)); err == nil {
			t.Errorf("parseStat(%q) succeeded", bad)
		}
	}
}

// TestStartTimeOddCommReal runs a real program whose name contains spaces and
// parentheses.
func TestStartTimeOddCommReal(t *testing.T) {
	sleep, err := exec.LookPath("sleep")
	if err != nil {
		t.Skip("no sleep binary")
	}
	odd := filepath.Join(t.TempDir(), ") (x) 1 2 (")
	if err := os.Symlink(sleep, odd); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(odd, "60")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	pid := cmd.Process.Pid
	var st stat
	waitFor(t, "exec to complete", 5*time.Second, func() bool {
		st, err = readStat(pid)
		return err == nil && strings.Contains(st.comm, "(x)")
	})
	if st.ppid != os.Getpid() || st.start == 0 {
		t.Fatalf("stat of %q = %+v", odd, st)
	}
	start, err := StartTime(pid)
	if err != nil || start != st.start || !Alive(pid, start) {
		t.Fatalf("StartTime = %d, %v; want %d and alive", start, err, st.start)
	}
}

func TestCheckGroupRefusesDangerousIDs(t *testing.T) {
	for _, pgid := range []int{-5, 0, 1, syscall.Getpgrp()} {
		if err := checkGroup(pgid); err == nil {
			t.Errorf("checkGroup(%d) accepted", pgid)
		}
	}
}

func TestKillByEnv(t *testing.T) {
	marker := fmt.Sprintf("QUEUECTL_TEST_MARK=%d", time.Now().UnixNano())
	// A group leader with a child in its group, and a child that left the
	// group (setsid) but kept the variables: all three must die.
	cmd := exec.Command("sh", "-c", "sleep 60 & setsid sleep 60 & wait")
	cmd.Env = append(os.Environ(), marker, "QUEUECTL_ATTEMPT=1")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	other := exec.Command("sleep", "60") // same attempt variable, other job: must live
	other.Env = append(os.Environ(), "QUEUECTL_TEST_MARK=other", "QUEUECTL_ATTEMPT=1")
	if err := other.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { other.Process.Kill(); other.Wait() }()
	var n int
	waitFor(t, "the job's three processes to be found", 5*time.Second, func() bool {
		n = countEnv(t, marker)
		return n == 3
	})
	killed, err := KillByEnv(marker, "QUEUECTL_ATTEMPT=1")
	if err != nil || killed != 3 {
		t.Fatalf("KillByEnv = %d, %v; want 3", killed, err)
	}
	<-done
	waitFor(t, "the job's processes to die", 5*time.Second, func() bool { return countEnv(t, marker) == 0 })
	if !Alive(other.Process.Pid, 0) {
		t.Fatal("a process of another job was killed")
	}
	if _, err := KillByEnv(); err == nil {
		t.Fatal("no entries must be refused: it would match every process")
	}
}

func TestHasAll(t *testing.T) {
	env := []byte("QUEUECTL_JOB_ID=a?=b\x00QUEUECTL_ATTEMPT=1\x00QUEUECTL_WORKER=w1\x00")
	old := []byte("QUEUECTL_JOB_ID=a?=b\x00QUEUECTL_ATTEMPT=1\x00")
	for _, tc := range []struct {
		env     []byte
		entries []string
		want    bool
	}{
		{env, []string{"QUEUECTL_JOB_ID=a?=b", "QUEUECTL_ATTEMPT=1"}, true},
		{env, []string{"QUEUECTL_JOB_ID=a", "QUEUECTL_ATTEMPT=1"}, false},
		{env, []string{"QUEUECTL_JOB_ID=a?=b", "QUEUECTL_WORKER?=w1"}, true},
		{env, []string{"QUEUECTL_JOB_ID=a?=b", "QUEUECTL_WORKER?=w2"}, false}, // another worker's
		{old, []string{"QUEUECTL_JOB_ID=a?=b", "QUEUECTL_WORKER?=w2"}, true},  // no worker variable: an older worker's
		{old, []string{"QUEUECTL_JOB_ID=a?=b", "QUEUECTL_WORKER=w2"}, false},
		{env, []string{"QUEUECTL_WORKER?="}, false},
	} {
		if got := hasAll(tc.env, tc.entries); got != tc.want {
			t.Errorf("hasAll(%q, %q) = %v, want %v", tc.env, tc.entries, got, tc.want)
		}
	}
}

// countEnv counts live processes whose environment holds entry.
func countEnv(t *testing.T, entry string) int {
	t.Helper()
	names, _ := os.ReadDir("/proc")
	n := 0
	for _, d := range names {
		pid, err := strconv.Atoi(d.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		env, err := os.ReadFile("/proc/" + d.Name() + "/environ")
		if err == nil && hasAll(env, []string{entry}) && Alive(pid, 0) {
			n++
		}
	}
	return n
}

func TestReadUsage(t *testing.T) {
	u, err := ReadUsage(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if u.ResidentBytes == 0 || u.VirtualBytes < u.ResidentBytes || u.Started <= 0 {
		t.Errorf("ReadUsage(self) = %+v: want resident > 0, virtual ≥ resident, a start time", u)
	}
	if _, err := ReadUsage(1 << 30); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("ReadUsage(no such pid) = %v, want os.ErrNotExist", err)
	}
}
