package executor

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/queuectl/queuectl/internal/proc"
)

// run runs script and reports the result, how long Run took and the pgid
// passed to OnStart (0 if it was not called).
func run(t *testing.T, cfg Config, ctx context.Context, c Command) (Result, time.Duration, int) {
	t.Helper()
	var pgid atomic.Int64
	var calls atomic.Int32
	inner := c.OnStart
	c.OnStart = func(p int) {
		calls.Add(1)
		pgid.Store(int64(p))
		if inner != nil {
			inner(p)
		}
	}
	start := time.Now()
	res := New(cfg).Run(ctx, c)
	took := time.Since(start)
	if n := calls.Load(); n > 1 {
		t.Fatalf("OnStart called %d times", n)
	}
	p := int(pgid.Load())
	if p != 0 {
		if p != res.PID {
			t.Fatalf("OnStart pgid %d != Result.PID %d", p, res.PID)
		}
		if p <= 1 || p == syscall.Getpgrp() {
			t.Fatalf("bad pgid %d", p)
		}
	}
	return res, took, p
}

// groupGone reports whether no live process is left in group pgid.
// kill(-pgid, 0) also finds zombies, which stay forever where init does not
// reap orphans (some containers), so zombies are looked up and ignored.
func groupGone(pgid int) bool {
	if errors.Is(syscall.Kill(-pgid, 0), syscall.ESRCH) {
		return true
	}
	members, err := proc.GroupMembers(pgid)
	return err == nil && len(members) == 0
}

// assertGroupGone polls, with a deadline, until group pgid has no live member.
func assertGroupGone(t *testing.T, pgid int) {
	t.Helper()
	if pgid == 0 {
		t.Fatal("OnStart was not called")
	}
	deadline := time.Now().Add(2 * time.Second)
	for !groupGone(pgid) {
		if time.Now().After(deadline) {
			members, _ := proc.GroupMembers(pgid)
			t.Fatalf("process group %d still has live members %v", pgid, members)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestExitCodes(t *testing.T) {
	for script, code := range map[string]int{"exit 0": 0, "exit 3": 3, "true": 0, "false": 1, "exit 255": 255} {
		res, _, _ := run(t, Config{}, context.Background(), Command{Script: script})
		if res.ExitCode != code || res.Signal != "" || res.TimedOut || res.Canceled || res.StartErr != nil || res.KilledLeftovers {
			t.Errorf("%q: %+v, want exit %d", script, res, code)
		}
		if res.Started.IsZero() || res.Finished.Before(res.Started) || res.Started.Location() != time.UTC {
			t.Errorf("%q: bad times %v .. %v", script, res.Started, res.Finished)
		}
	}
}

func TestTerminatingSignal(t *testing.T) {
	for script, sig := range map[string]string{"kill -9 $$": "SIGKILL", "kill -TERM $$": "SIGTERM"} {
		res, _, _ := run(t, Config{}, context.Background(), Command{Script: script})
		if res.ExitCode != -1 || res.Signal != sig || res.TimedOut || res.Canceled {
			t.Errorf("%q: ExitCode %d Signal %q, want -1 %s", script, res.ExitCode, res.Signal, sig)
		}
	}
}

func TestCommandNotFound(t *testing.T) {
	res, _, _ := run(t, Config{}, context.Background(), Command{Script: "queuectl-no-such-command-xyz"})
	if res.ExitCode != 127 || res.StartErr != nil {
		t.Fatalf("ExitCode %d StartErr %v, want 127", res.ExitCode, res.StartErr)
	}
	if !bytes.Contains(res.Output, []byte("not found")) {
		t.Fatalf("output %q does not mention 'not found'", res.Output)
	}
}

func TestCombinedOutputOrder(t *testing.T) {
	res, _, _ := run(t, Config{}, context.Background(), Command{Script: "echo out1; echo err1 >&2; echo out2"})
	if got := string(res.Output); got != "out1\nerr1\nout2\n" || res.Dropped != 0 {
		t.Fatalf("Output %q Dropped %d", got, res.Dropped)
	}
}

func TestTimeoutStopsWholeGroup(t *testing.T) {
	const timeout, grace = 200 * time.Millisecond, 500 * time.Millisecond
	res, took, pgid := run(t, Config{KillGrace: grace}, context.Background(),
		Command{Script: "sleep 60 & echo started; sleep 60; wait", Timeout: timeout})
	if !res.TimedOut || res.Canceled {
		t.Fatalf("TimedOut %v Canceled %v", res.TimedOut, res.Canceled)
	}
	if took < timeout || took > timeout+grace+time.Second {
		t.Fatalf("Run took %v, want between %v and about %v", took, timeout, timeout+grace)
	}
	if res.ExitCode != -1 || res.Signal != "SIGTERM" {
		t.Fatalf("ExitCode %d Signal %q, want -1 SIGTERM", res.ExitCode, res.Signal)
	}
	if string(res.Output) != "started\n" {
		t.Fatalf("Output %q", res.Output)
	}
	assertGroupGone(t, pgid)
}

func TestTimeoutEscalatesToSIGKILL(t *testing.T) {
	const timeout, grace = 200 * time.Millisecond, 500 * time.Millisecond
	for name, script := range map[string]string{
		// The shell and its child both ignore SIGTERM.
		"shell ignores TERM": "trap '' TERM; echo ready; sleep 60",
		// The shell dies of SIGTERM at once, a grandchild ignores it.
		"grandchild ignores TERM": "sh -c \"trap '' TERM; exec sleep 60\" & echo ready; sleep 60; wait",
	} {
		t.Run(name, func(t *testing.T) {
			res, took, pgid := run(t, Config{KillGrace: grace}, context.Background(),
				Command{Script: script, Timeout: timeout})
			if !res.TimedOut {
				t.Fatalf("TimedOut false: %+v", res)
			}
			if took < timeout+grace-50*time.Millisecond || took > timeout+grace+time.Second {
				t.Fatalf("Run took %v, want about %v", took, timeout+grace)
			}
			if name == "shell ignores TERM" && res.Signal != "SIGKILL" {
				t.Fatalf("Signal %q, want SIGKILL", res.Signal)
			}
			if res.ExitCode != -1 {
				t.Fatalf("ExitCode %d, want -1", res.ExitCode)
			}
			assertGroupGone(t, pgid)
		})
	}
}

func TestCancel(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	res, took, pgid := run(t, Config{KillGrace: 5 * time.Second}, ctx, Command{
		Script:  "sleep 60 & sleep 60; wait",
		OnStart: func(int) { go cancel() },
	})
	if !res.Canceled || res.TimedOut || res.StartErr != nil {
		t.Fatalf("Canceled %v TimedOut %v StartErr %v", res.Canceled, res.TimedOut, res.StartErr)
	}
	if res.ExitCode != -1 || res.Signal != "SIGTERM" {
		t.Fatalf("ExitCode %d Signal %q, want -1 SIGTERM", res.ExitCode, res.Signal)
	}
	if took > 2*time.Second {
		t.Fatalf("Run took %v after cancel; the group obeys SIGTERM, no grace needed", took)
	}
	assertGroupGone(t, pgid)
}

// shortGrace is a cancel cause asking for a shorter kill grace.
type shortGrace time.Duration

func (g shortGrace) Error() string            { return "stop soon" }
func (g shortGrace) KillGrace() time.Duration { return time.Duration(g) }

// A cancel whose cause asks for a shorter kill grace (a worker whose lease
// is running out) gets SIGKILL after it, not after Config.KillGrace.
func TestCancelCauseShortensKillGrace(t *testing.T) {
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	res, took, pgid := run(t, Config{KillGrace: time.Hour}, ctx, Command{
		Script: "trap '' TERM; echo ready; sleep 60",
		// Cancel once the trap is set: the shell has printed ready.
		Live: func(read func() ([]byte, int64)) {
			go func() {
				for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
					if out, _ := read(); strings.Contains(string(out), "ready") {
						break
					}
				}
				cancel(shortGrace(200 * time.Millisecond))
			}()
		},
	})
	if !res.Canceled || res.Signal != "SIGKILL" {
		t.Fatalf("Canceled %v Signal %q, want a cancel ended by SIGKILL", res.Canceled, res.Signal)
	}
	if took > 30*time.Second {
		t.Fatalf("Run took %v: the hour of Config.KillGrace was used, not the cause's 200ms", took)
	}
	assertGroupGone(t, pgid)
}

func TestCanceledBeforeStart(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	res, _, pgid := run(t, Config{}, ctx, Command{Script: "echo should-not-run"})
	if !res.Canceled || !errors.Is(res.StartErr, context.Canceled) || res.ExitCode != -1 || pgid != 0 || res.PID != 0 || len(res.Output) != 0 {
		t.Fatalf("%+v", res)
	}
}

func TestEnvAndDir(t *testing.T) {
	t.Setenv("QUEUECTL_TEST_INHERITED", "inherited")
	t.Setenv("QUEUECTL_TEST_OVERRIDE", "parent")
	dir := t.TempDir()
	res, _, _ := run(t, Config{}, context.Background(), Command{
		Script: `echo "$QUEUECTL_TEST_INHERITED $QUEUECTL_TEST_OVERRIDE $QUEUECTL_TEST_EXTRA"; pwd -P`,
		Env:    []string{"QUEUECTL_TEST_OVERRIDE=first", "QUEUECTL_TEST_EXTRA=extra", "QUEUECTL_TEST_OVERRIDE=last"},
		Dir:    dir,
	})
	real, err := filepath.EvalSymlinks(dir)
	if err != nil {
		t.Fatal(err)
	}
	if got, w := string(res.Output), "inherited last extra\n"+real+"\n"; got != w || res.ExitCode != 0 {
		t.Fatalf("Output %q exit %d, want %q", got, res.ExitCode, w)
	}
}

// Every command reads the null device on its stdin: at end of input at
// once, whether it runs alone, beside others or after one that closed its
// own stdin (the executor opens the device once and shares it).
func TestStdinIsTheNullDevice(t *testing.T) {
	e := New(Config{})
	script := `readlink /proc/self/fd/0; if read -r line; then echo "read $line"; else echo eof; fi`
	check := func(res Result) {
		t.Helper()
		if got, want := string(res.Output), "/dev/null\neof\n"; got != want || res.ExitCode != 0 {
			t.Fatalf("output %q exit %d, want %q", got, res.ExitCode, want)
		}
	}
	check(e.Run(context.Background(), Command{Script: script}))
	if res := e.Run(context.Background(), Command{Script: `exec 0<&-; cat 2>/dev/null; echo closed`}); string(res.Output) != "closed\n" {
		t.Fatalf("closing its stdin: output %q", res.Output)
	}
	results := make(chan Result, 4)
	for range cap(results) {
		go func() { results <- e.Run(context.Background(), Command{Script: script}) }()
	}
	for range cap(results) {
		check(<-results)
	}
}

func TestStartErrors(t *testing.T) {
	called := false
	res := New(Config{Shell: []string{"/nonexistent/queuectl-shell", "-c"}}).Run(context.Background(),
		Command{Script: "true", OnStart: func(int) { called = true }})
	if !errors.Is(res.StartErr, fs.ErrNotExist) || res.ExitCode != -1 || called || res.PID != 0 {
		t.Fatalf("missing shell: %+v (OnStart called %v)", res, called)
	}
	if !strings.HasPrefix(res.StartErr.Error(), "start command: ") {
		t.Fatalf("StartErr %q not wrapped", res.StartErr)
	}
	missing := filepath.Join(t.TempDir(), "missing")
	res = New(Config{}).Run(context.Background(), Command{Script: "true", Dir: missing})
	if res.StartErr == nil || res.ExitCode != -1 {
		t.Fatalf("missing Dir: %+v", res)
	}
	// The user sees which directory is missing, not "fork/exec /bin/sh".
	want := "working directory " + missing + " does not exist"
	if !strings.Contains(res.StartErr.Error(), want) || !strings.Contains(string(res.Output), want) {
		t.Fatalf("missing Dir: StartErr %q Output %q, want both to say %q", res.StartErr, res.Output, want)
	}
}

func TestLargeOutputIsCapped(t *testing.T) {
	const limit = 1 << 20
	const n = 50 << 20
	res, _, _ := run(t, Config{}, context.Background(), Command{
		Script: "printf 'BEGIN\\n'; head -c " + strconv.Itoa(n) + " /dev/zero; printf '\\nEND\\n'",
	})
	if res.ExitCode != 0 || res.Signal != "" {
		t.Fatalf("exit %d signal %q, want success", res.ExitCode, res.Signal)
	}
	total := int64(len("BEGIN\n") + n + len("\nEND\n"))
	if res.Dropped != total-limit {
		t.Fatalf("Dropped %d, want %d", res.Dropped, total-limit)
	}
	marker := droppedMarker(res.Dropped)
	if len(res.Output) != limit+len(marker) {
		t.Fatalf("len(Output) = %d, want %d", len(res.Output), limit+len(marker))
	}
	if !bytes.HasPrefix(res.Output, []byte("BEGIN\n\x00")) || !bytes.HasSuffix(res.Output, []byte("\x00\nEND\n")) {
		t.Fatalf("head or tail lost: %q ... %q", res.Output[:10], res.Output[len(res.Output)-10:])
	}
	if got := string(res.Output[limit/2 : limit/2+len(marker)]); got != marker {
		t.Fatalf("marker %q, want %q", got, marker)
	}
}

func TestLeftoverHoldingStdoutDoesNotHang(t *testing.T) {
	res, took, pgid := run(t, Config{}, context.Background(), Command{Script: "sleep 30 & echo done"})
	if res.ExitCode != 0 || string(res.Output) != "done\n" || !res.KilledLeftovers {
		t.Fatalf("%+v", res)
	}
	// Well under WaitDelay (2s): the leftover is killed, not waited out.
	if took > time.Second {
		t.Fatalf("Run took %v", took)
	}
	assertGroupGone(t, pgid)
}

func TestNoLeftovers(t *testing.T) {
	res, _, _ := run(t, Config{}, context.Background(), Command{Script: "sleep 0 & wait; echo ok"})
	if res.KilledLeftovers || res.ExitCode != 0 || string(res.Output) != "ok\n" {
		t.Fatalf("%+v", res)
	}
}

// TestEscapedProcessHoldingPipe: a process that left the group (setsid) but
// keeps the output pipe open delays Run by WaitDelay, not more.
func TestEscapedProcessHoldingPipe(t *testing.T) {
	const waitDelay = 300 * time.Millisecond
	pidFile := filepath.Join(t.TempDir(), "escaped.pid")
	t.Cleanup(func() {
		if b, err := os.ReadFile(pidFile); err == nil {
			if pid, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil && pid > 1 {
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
		}
	})
	res, took, _ := run(t, Config{WaitDelay: waitDelay}, context.Background(), Command{
		Script: `setsid sh -c 'echo $$ >"$F.tmp" && mv "$F.tmp" "$F" && exec sleep 30' &
i=0; while [ ! -s "$F" ] && [ $i -lt 500 ]; do sleep 0.01; i=$((i+1)); done
echo hi`,
		Env: []string{"F=" + pidFile},
	})
	if _, err := os.Stat(pidFile); err != nil {
		t.Fatalf("escaped process did not start: %v; %+v", err, res)
	}
	if res.ExitCode != 0 || string(res.Output) != "hi\n" {
		t.Fatalf("%+v", res)
	}
	if took < waitDelay || took > waitDelay+time.Second {
		t.Fatalf("Run took %v, want about WaitDelay %v", took, waitDelay)
	}
}

func TestKillGroupGuards(t *testing.T) {
	// Signal 0 so that a broken guard cannot hurt the test process.
	for _, pgid := range []int{-3, 0, 1, syscall.Getpgrp()} {
		if err := KillGroup(pgid, 0); err == nil {
			t.Errorf("KillGroup(%d) accepted", pgid)
		}
	}
	res := New(Config{}).Run(context.Background(), Command{Script: "true"})
	if err := KillGroup(res.PID, syscall.SIGKILL); err != nil {
		t.Errorf("KillGroup(gone group) = %v, want nil (ESRCH ignored)", err)
	}
}

func TestSignalName(t *testing.T) {
	if got := signalName(syscall.SIGKILL); got != "SIGKILL" {
		t.Errorf("signalName(SIGKILL) = %q", got)
	}
	if got := signalName(syscall.Signal(60)); got != "signal 60" {
		t.Errorf("signalName(60) = %q", got)
	}
}

func TestDefaults(t *testing.T) {
	cfg := New(Config{}).Config()
	if strings.Join(cfg.Shell, " ") != "/bin/sh -c" || cfg.KillGrace != 5*time.Second || cfg.OutputLimit != 1<<20 || cfg.WaitDelay <= 0 {
		t.Fatalf("defaults: %+v", cfg)
	}
	if _, err := os.Stat(cfg.Shell[0]); err != nil {
		t.Skipf("default shell missing: %v", err)
	}
}

func TestOnStartPanicKillsGroup(t *testing.T) {
	var pgid int
	func() {
		defer func() {
			if r := recover(); r != "boom" {
				t.Fatalf("recovered %v, want the OnStart panic", r)
			}
		}()
		New(Config{}).Run(context.Background(), Command{
			Script:  "sleep 60 & sleep 60",
			OnStart: func(p int) { pgid = p; panic("boom") },
		})
	}()
	assertGroupGone(t, pgid)
}

// Live reads the output while the command still runs.
func TestLiveOutputWhileRunning(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	reads := make(chan func() ([]byte, int64), 1)
	done := make(chan Result, 1)
	go func() {
		done <- New(Config{KillGrace: time.Second}).Run(ctx, Command{Script: "echo one; exec sleep 30",
			Live: func(read func() ([]byte, int64)) { reads <- read }})
	}()
	var read func() ([]byte, int64)
	select {
	case read = <-reads:
	case <-time.After(10 * time.Second):
		t.Fatal("Live was not called")
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		out, n := read()
		if string(out) == "one\n" && n == 4 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("live output %q (%d bytes written), want %q", out, n, "one\n")
		}
		time.Sleep(10 * time.Millisecond)
	}
	select {
	case res := <-done:
		t.Fatalf("Run returned while the command should still run: %+v", res)
	default:
	}
	cancel()
	if res := <-done; !res.Canceled || string(res.Output) != "one\n" {
		t.Fatalf("after cancel: canceled=%v output %q", res.Canceled, res.Output)
	}
}
