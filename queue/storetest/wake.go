package storetest

import (
	"context"
	"testing"
	"time"
)

func testWakeups(t *testing.T, open Opener) {
	watcher, writer := open(t), open(t)
	c, cancel := context.WithCancel(ctx(t))
	defer cancel()
	wake, err := watcher.Wakeups(c)
	if err != nil {
		t.Fatal(err)
	}
	insert(t, writer, job(t, "a", nil))
	select {
	case <-wake:
	case <-time.After(10 * time.Second):
		t.Fatal("no wake-up after an insert by another handle")
	}
	cancel()
	for range wake { // closed when ctx ends
	}
}
