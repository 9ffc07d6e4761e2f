package proc

import (
	"errors"
	"io"
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
	if len(id) != 36 || strings.TrimSpace(id) != id {
		t.Fatalf("BootID() = %q, want a trimmed 36-character uuid", id)
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
	if st.comm != "a) b (c) S" || st.state != 'R' || st.ppid != 17 || st.pgrp != 4242 || st.start != 987654 {
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

// startGroup starts script as leader of a new process group. The script's
// stdin is a pipe; closing the returned writer lets a script blocked in
// "read x" finish.
func startGroup(t *testing.T, script string) (*exec.Cmd, io.WriteCloser) {
	t.Helper()
	cmd := exec.Command("sh", "-c", script)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pgid := cmd.Process.Pid
	t.Cleanup(func() {
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
		_ = stdin.Close()
		_ = cmd.Wait()
	})
	// The script prints one line once its background member is running.
	buf := make([]byte, 64)
	n, err := out.Read(buf)
	if err != nil || !strings.HasSuffix(string(buf[:n]), "\n") {
		t.Fatalf("reading script readiness line: %q, %v", buf[:n], err)
	}
	if _, err := strconv.Atoi(strings.TrimSpace(string(buf[:n]))); err != nil {
		t.Fatalf("readiness line %q: %v", buf[:n], err)
	}
	return cmd, stdin
}

func groupGone(pgid int) func() bool {
	return func() bool { return !GroupAlive(pgid) }
}

func TestKillOrphanGroupLeaderGone(t *testing.T) {
	// The leader starts a member, reports, then exits once stdin closes; the
	// member is left orphaned in the group.
	cmd, stdin := startGroup(t, "sleep 60 </dev/null >/dev/null 2>&1 & echo $!; read x; exit 0")
	pgid := cmd.Process.Pid
	leaderStart, err := StartTime(pgid)
	if err != nil {
		t.Fatal(err)
	}
	members, err := GroupMembers(pgid)
	if err != nil || len(members) != 2 {
		t.Fatalf("GroupMembers = %v, %v; want leader and sleep", members, err)
	}
	_ = stdin.Close()
	if err := cmd.Wait(); err != nil {
		t.Fatalf("leader: %v", err)
	}
	if Alive(pgid, leaderStart) {
		t.Fatal("reaped leader reported alive")
	}
	if !GroupAlive(pgid) {
		t.Fatal("orphaned group reported dead")
	}
	sent, err := KillOrphanGroup(pgid, leaderStart)
	if err != nil || !sent {
		t.Fatalf("KillOrphanGroup = %v, %v; want true", sent, err)
	}
	waitFor(t, "orphan group to die", 5*time.Second, groupGone(pgid))
	sent, err = KillOrphanGroup(pgid, leaderStart)
	if err != nil || sent {
		t.Fatalf("KillOrphanGroup on dead group = %v, %v; want false, nil", sent, err)
	}
}

func TestKillOrphanGroupLeaderAlive(t *testing.T) {
	for _, tc := range []struct {
		name     string
		useStart bool
	}{{"matching start", true}, {"unknown start", false}} {
		t.Run(tc.name, func(t *testing.T) {
			cmd, _ := startGroup(t, "sleep 60 </dev/null >/dev/null 2>&1 & echo $!; read x; exit 0")
			pgid := cmd.Process.Pid
			var start uint64
			if tc.useStart {
				var err error
				if start, err = StartTime(pgid); err != nil {
					t.Fatal(err)
				}
			}
			sent, err := KillOrphanGroup(pgid, start)
			if err != nil || !sent {
				t.Fatalf("KillOrphanGroup = %v, %v; want true", sent, err)
			}
			waitFor(t, "group to die", 5*time.Second, groupGone(pgid))
		})
	}
}

func TestKillOrphanGroupRefusesReusedPid(t *testing.T) {
	cmd, _ := startGroup(t, "sleep 60 </dev/null >/dev/null 2>&1 & echo $!; read x; exit 0")
	pgid := cmd.Process.Pid
	start, err := StartTime(pgid)
	if err != nil {
		t.Fatal(err)
	}
	sent, err := KillOrphanGroup(pgid, start+1)
	if err != nil || sent {
		t.Fatalf("KillOrphanGroup with wrong start = %v, %v; want false, nil", sent, err)
	}
	members, err := GroupMembers(pgid)
	if err != nil || len(members) != 2 {
		t.Fatalf("group was touched: members %v, %v", members, err)
	}
}

func TestKillOrphanGroupRefusesDangerousIDs(t *testing.T) {
	for _, pgid := range []int{-5, 0, 1} {
		if sent, err := KillOrphanGroup(pgid, 0); err == nil || sent {
			t.Errorf("KillOrphanGroup(%d) = %v, %v; want refusal", pgid, sent, err)
		}
	}
	// Do not call KillOrphanGroup on our own group: if the guard were
	// broken it would kill the test run. Check the guard itself.
	if err := checkGroup(syscall.Getpgrp()); err == nil {
		t.Error("checkGroup(own group) accepted")
	}
}
