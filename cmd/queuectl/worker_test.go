package main

import (
	"errors"
	"os/exec"
	"testing"
)

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

// When one worker fails to start, the others started are stopped, and
// the error says how many; one that exited already is not counted.
func TestStopStarted(t *testing.T) {
	var children []*exec.Cmd
	for _, args := range [][]string{{"sleep", "60"}, {"sleep", "60"}, {"true"}} {
		c := exec.Command(args[0], args[1:]...)
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		children = append(children, c)
	}
	if err := children[2].Wait(); err != nil {
		t.Fatal(err)
	}
	why := errors.New("worker 3 exited at start")
	err := stopStarted(children, why)
	if !errors.Is(err, why) || err.Error() != "worker 3 exited at start; stopped the 2 worker(s) started with it" {
		t.Fatalf("stopStarted: %v", err)
	}
	for _, c := range children[:2] {
		if err := c.Wait(); err == nil || c.ProcessState.Success() {
			t.Errorf("a started worker was not stopped: %v", c.ProcessState)
		}
	}
	if err := stopStarted(nil, why); err != why {
		t.Errorf("none started: %v", err)
	}
}
