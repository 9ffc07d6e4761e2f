package main

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/queuectl/queuectl/internal/proc"
)

// runSkewed runs one command line in this process, as host with home, on an
// app whose clock is off by skew: the way a host whose clock runs ahead or
// behind sees the shared PostgreSQL queue.
func runSkewed(t *testing.T, db, host, home string, skew time.Duration, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	env := map[string]string{"QUEUECTL_DB": db, "QUEUECTL_HOST": host, "QUEUECTL_HOME": home}
	var out, errOut bytes.Buffer
	a := newApp(strings.NewReader(""), &out, &errOut, func(k string) string { return env[k] })
	a.now = func() time.Time { return time.Now().Add(skew).UTC() }
	root := a.rootCmd()
	root.SetArgs(args)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	code = exitOK
	if err := root.ExecuteContext(ctx); err != nil {
		errOut.WriteString(err.Error())
		code = exitCode(err)
	}
	return out.String(), errOut.String(), code
}

// Heartbeats on PostgreSQL are stamped with the server's clock, so a host
// whose own clock runs ahead or behind must compare them with the server's
// too: status counts host B's live worker as live and its killed one as gone,
// and worker stop --all-hosts waits for the live one to stop instead of
// calling it silent.
func TestE2EPostgresSkewedHostJudgesWorkersOnTheServerClock(t *testing.T) {
	_, db := newPGSchema(t)
	b, c := newPGHost(t, db, "host-b"), newPGHost(t, db, "host-c")
	home := t.TempDir()
	// Host B's worker heartbeats every 10 s when idle, and unregisters a
	// worker of another host silent for two of its leases (2 min).
	b.startWorkers("--lease", "1m")
	// Host C's worker is killed, and silent for 45 s on the server's clock;
	// nothing on host C is left to unregister it.
	killed := c.startWorkers()[0]
	if err := syscall.Kill(killed, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	if err := pgTestExec(db, `UPDATE workers SET heartbeat_at = now() - interval '45 seconds' WHERE pid = $1`, killed); err != nil {
		t.Fatal(err)
	}

	for _, skew := range []time.Duration{time.Hour, -time.Hour} {
		out, errOut, code := runSkewed(t, db, "host-a", home, skew, "status", "--json")
		if code != 0 {
			t.Fatalf("status, clock off by %s: exit %d: %s", skew, code, errOut)
		}
		var st struct{ Workers int }
		if err := json.Unmarshal([]byte(out), &st); err != nil {
			t.Fatal(err)
		}
		if st.Workers != 1 {
			t.Errorf("status on a host whose clock is off by %s counts %d live workers, want 1 (host B's live one)", skew, st.Workers)
		}
	}

	out, errOut, code := runSkewed(t, db, "host-a", home, time.Hour, "worker", "stop", "--all-hosts", "--timeout", "30s")
	if code != 0 || !strings.Contains(out, "stopped 1 worker(s)") || strings.Contains(errOut, "host-b:") {
		t.Fatalf("worker stop --all-hosts on a host an hour ahead: exit %d\nstdout: %s\nstderr: %s", code, out, errOut)
	}
}

// Workers judge each other's registrations without knowing each other's
// leases: an idle worker with a long lease beats often enough that one with
// a short lease does not unregister it (which worker stop --all-hosts would
// then neither ask nor wait for), and status keeps counting it.
func TestE2EPostgresLongLeaseWorkerStaysRegistered(t *testing.T) {
	_, db := newPGSchema(t)
	a, b, c := newPGHost(t, db, "host-a"), newPGHost(t, db, "host-b"), newPGHost(t, db, "host-c")
	a.startWorkers("--lease", "2s")
	pid := b.startWorkers("--lease", "10m")[0]
	type worker struct {
		PID         int       `json:"pid"`
		Host        string    `json:"host"`
		HeartbeatAt time.Time `json:"heartbeat_at"`
	}
	hostB := func() (worker, bool) {
		var ws []worker
		if err := json.Unmarshal([]byte(c.ok("worker", "list", "--json")), &ws); err != nil {
			t.Fatal(err)
		}
		for _, w := range ws {
			if w.Host == "host-b" {
				return w, true
			}
		}
		return worker{}, false
	}
	first, ok := hostB()
	if !ok {
		t.Fatal("host B's worker is not registered")
	}
	waitFor(t, "host B's idle worker to renew its registration", 30*time.Second, func() bool {
		w, ok := hostB()
		if !ok {
			t.Fatal("host A's worker unregistered host B's live worker")
		}
		return w.HeartbeatAt.After(first.HeartbeatAt)
	})

	out, errOut, code := c.run("worker", "stop", "--all-hosts", "--timeout", "30s")
	if code != 0 || !strings.Contains(out, "stopped 2 worker(s)") {
		t.Fatalf("worker stop --all-hosts: exit %d\nstdout: %s\nstderr: %s", code, out, errOut)
	}
	waitFor(t, "host B's worker to exit", 10*time.Second, func() bool { return !proc.Alive(pid, b.workers[0].start) })
}
