package queue

import (
	"context"
	"sync/atomic"
	"testing"
)

func TestServiceStartStopTwice(t *testing.T) {
	var s service
	var runs atomic.Int32
	loop := func(ctx context.Context) {
		runs.Add(1)
		<-ctx.Done()
	}
	if !s.start(loop) {
		t.Fatal("first start did not start")
	}
	if s.start(loop) {
		t.Error("second start started again")
	}
	s.stop()
	s.stop()
	if got := runs.Load(); got != 1 {
		t.Errorf("loop ran %d times, want 1", got)
	}
	if s.start(loop) {
		t.Error("start after stop started")
	}
}

func TestServiceStopBeforeStart(t *testing.T) {
	var s service
	s.stop()
	if s.start(func(context.Context) { t.Error("loop ran after stop") }) {
		t.Error("start after stop started")
	}
}

func TestEnginePartsStopTwice(t *testing.T) {
	e := NewEngine(nil, nil, EngineConfig{})
	for range 2 {
		e.lanes.Stop()
		e.leases.Stop()
		e.rescuer.Stop()
		e.wakes.Stop()
	}
}
