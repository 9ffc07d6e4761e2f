package supervise

import (
	"os/exec"
	"testing"
	"time"

	"github.com/queuectl/queuectl/internal/proc"
)

// worker stop reads a local worker's kill grace from its command line, as
// worker start passed it (the last one counts, in either form); without
// one, or for a process that is gone, it assumes the default.
func TestKillGraceFromCommandLine(t *testing.T) {
	const def = 5 * time.Second
	for _, c := range []struct {
		args []string
		want time.Duration
	}{
		{nil, def},
		{[]string{"--kill-grace", "250ms"}, 250 * time.Millisecond},
		{[]string{"--kill-grace=2s", "--kill-grace", "1m"}, time.Minute},
		{[]string{"--kill-grace", "1m", "--kill-grace=1d"}, 24 * time.Hour},
		{[]string{"--kill-grace", "bogus"}, def},
		{[]string{"--kill-grace"}, def},
	} {
		cmd := exec.Command("sh", append([]string{"-c", "sleep 30; :", "sh"}, c.args...)...)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		pid := cmd.Process.Pid
		deadline := time.Now().Add(5 * time.Second)
		for { // until the exec is done
			if args, _ := proc.Args(pid); len(args) > 0 && args[0] == "sh" || time.Now().After(deadline) {
				break
			}
			time.Sleep(5 * time.Millisecond)
		}
		got := killGrace(pid, def)
		cmd.Process.Kill()
		cmd.Wait()
		if got != c.want {
			t.Errorf("killGrace with %q = %s, want %s", c.args, got, c.want)
		}
		if got := killGrace(pid, def); got != def {
			t.Errorf("killGrace of a process that is gone = %s, want %s", got, def)
		}
	}
}
