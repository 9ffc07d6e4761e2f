package main

import "testing"

// A worker process runs Go code on no more threads than it has slots,
// unless GOMAXPROCS says otherwise.
func TestWorkerProcsFollowSlots(t *testing.T) {
	for _, c := range []struct {
		slots, current int
		env            string
		want           int
	}{
		{1, 2, "", 1},
		{1, 16, "", 1},
		{4, 16, "", 4},
		{16, 16, "", 16},
		{64, 2, "", 2}, // never more than the runtime's own choice
		{1, 8, "8", 8}, // GOMAXPROCS set: the user's choice stands
		{1, 1, "", 1},
	} {
		if got := workerProcs(c.slots, c.current, c.env); got != c.want {
			t.Errorf("workerProcs(%d slots, GOMAXPROCS %d, env %q) = %d, want %d", c.slots, c.current, c.env, got, c.want)
		}
	}
}
