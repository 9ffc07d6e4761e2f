// Package blackhole drops the packets a TCP port of this host's loopback
// interface sends, as a network partition drops them: what the other end of
// its connections sends is never acknowledged, and nothing comes back. The
// other end's kernel sees no local drop (its own packets leave), so it
// retransmits as it would across a real partition. A proxy that stops
// forwarding cannot show that, since its kernel still acknowledges what
// reaches it.
//
// It replaces the loopback interface's root queueing discipline, when it
// is the default one, with one that sends the port's packets to a queue of
// length 0, with tc (iproute2), which needs root, and puts the default
// back when the test ends; one test at a time may use it. When tc cannot do
// it, the test is skipped, or fails when CI=true.
package blackhole

import (
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
)

// From drops every packet sent from port on the loopback interface until
// the test ends.
func From(t testing.TB, port int) {
	t.Helper()
	steps := [][]string{
		{"qdisc", "add", "dev", "lo", "root", "handle", "1:", "htb"}, // unclassified packets pass unshaped
		{"class", "add", "dev", "lo", "parent", "1:", "classid", "1:10", "htb", "rate", "10gbit"},
		{"qdisc", "add", "dev", "lo", "parent", "1:10", "handle", "10:", "pfifo", "limit", "0"},
		{"filter", "add", "dev", "lo", "parent", "1:", "protocol", "ip", "u32", "match", "ip", "sport", strconv.Itoa(port), "0xffff", "flowid", "1:10"},
	}
	if out, err := exec.Command("tc", "qdisc", "show", "dev", "lo", "root").CombinedOutput(); err != nil ||
		!strings.HasPrefix(string(out), "qdisc noqueue") {
		// Another's setting (or what a killed test left): not ours to replace.
		unavailable(t, "the loopback interface's root qdisc is not the default: %v: %s", err, strings.TrimSpace(string(out)))
	}
	for _, args := range steps {
		if out, err := exec.Command("tc", args...).CombinedOutput(); err != nil {
			remove()
			unavailable(t, "tc %s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
		}
	}
	t.Cleanup(remove)
}

func remove() { exec.Command("tc", "qdisc", "del", "dev", "lo", "root").Run() }

func unavailable(t testing.TB, format string, args ...any) {
	t.Helper()
	if os.Getenv("CI") == "true" {
		t.Fatalf("CI=true, so this is a failure: cannot drop packets: "+format, args...)
	}
	t.Skipf("cannot drop packets (needs root and tc): "+format, args...)
}
