package main

import (
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/queuectl/queuectl/internal/proc"
	"github.com/queuectl/queuectl/internal/testutil/tcpproxy"
)

// A network partition on PostgreSQL: host A's worker reaches the server
// through a proxy the test cuts while A runs a job. A cannot renew the
// lease, so it must stop the job's process group before the lease ends;
// after the lease host B rescues the job and runs it again. The first copy
// must be gone before the second starts: the second attempt finds the
// job's lock free and the first attempt's process group empty, and the
// first attempt's stop is logged before the second attempt's start.
func TestE2EPostgresPartitionStopsTheCutOffCopy(t *testing.T) {
	_, db := newPGSchema(t)
	u, err := url.Parse(db)
	if err != nil {
		t.Fatal(err)
	}
	proxy, err := tcpproxy.Start(u.Host)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { proxy.Close() }) // after the hosts' cleanups, which need the server
	viaProxy := *u
	viaProxy.Host = proxy.Addr()
	a := newPGHost(t, viaProxy.String(), "host-a")
	b := newPGHost(t, db, "host-b")

	dir := t.TempDir()
	log, pgidFile := filepath.Join(dir, "log"), filepath.Join(dir, "pgid")
	script := fmt.Sprintf(`exec 9>>%[1]s/lock
flock -n 9 || echo "attempt $QUEUECTL_ATTEMPT: the job's lock was held" >>%[1]s/overlaps
if [ "$QUEUECTL_ATTEMPT" != 1 ] && kill -0 -"$(cat %[3]s)" 2>/dev/null; then
	echo "attempt $QUEUECTL_ATTEMPT: the first attempt's process group still ran" >>%[1]s/overlaps
fi
echo "$QUEUECTL_ATTEMPT start $(date +%%s%%N)" >>%[2]s
if [ "$QUEUECTL_ATTEMPT" = 1 ]; then
	trap 'echo "1 stop $(date +%%s%%N)" >>%[2]s; exit 143' TERM
	echo $$ >%[3]s.tmp && mv %[3]s.tmp %[3]s
	sleep 60
fi
echo done`, dir, log, pgidFile)
	b.ok("enqueue", "--id", "cut", "--command", script)
	a.startWorkers("--lease", "3s", "--kill-grace", "1s")
	waitFor(t, "the first attempt to start on host A", 30*time.Second, func() bool {
		_, err := os.Stat(pgidFile)
		return err == nil
	})
	raw, _ := os.ReadFile(pgidFile)
	pgid, _ := strconv.Atoi(strings.TrimSpace(string(raw)))
	if pgid <= 1 {
		t.Fatalf("no process group recorded: %q", raw)
	}
	t.Cleanup(func() { syscall.Kill(-pgid, syscall.SIGKILL) })
	b.startWorkers("--lease", "3s")

	proxy.Cut()
	cut := time.Now()
	j := b.waitState("cut", "completed", 60*time.Second)
	proxy.Heal()

	if len(j.History) != 2 || j.History[0].Outcome != "lost" || j.History[1].Outcome != "succeeded" ||
		workerHost(j.History[0].Worker) != "host-a" || workerHost(j.History[1].Worker) != "host-b" {
		t.Fatalf("history %+v, want a lost attempt on host A, then a success on host B", j.History)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "overlaps")); err == nil {
		t.Errorf("the two copies overlapped:\n%s", b)
	}
	times := map[string]int64{}
	body, _ := os.ReadFile(log)
	for _, line := range strings.Split(strings.TrimSpace(string(body)), "\n") {
		f := strings.Fields(line)
		if len(f) == 3 {
			n, _ := strconv.ParseInt(f[2], 10, 64)
			times[f[0]+" "+f[1]] = n
		}
	}
	stop, second := times["1 stop"], times["2 start"]
	if stop == 0 || second == 0 || stop >= second {
		t.Fatalf("log %q: want the first attempt's stop before the second attempt's start", body)
	}
	if members, _ := proc.GroupMembers(pgid); len(members) != 0 {
		t.Errorf("the first attempt's process group %d still has members %v", pgid, members)
	}
	t.Logf("cut at 0; first copy stopped at %s; second copy started at %s",
		time.Unix(0, stop).Sub(cut).Round(time.Millisecond), time.Unix(0, second).Sub(cut).Round(time.Millisecond))
}
