package main

import (
	"syscall"
	"time"

	"github.com/queuectl/queuectl/queue"
	"github.com/queuectl/queuectl/queue/sqlite"
	"github.com/rs/zerolog"
)

// What a process cost, for operators and `queuectl bench`: a worker or
// service logs it when it exits; other commands log their store's writes
// at debug level.

// logWriteStats logs the SQLite store's write transactions: how many, the
// time spent waiting for the write lock and the time holding it. Other
// stores log nothing.
func logWriteStats(e *zerolog.Event, st queue.Store) {
	ws, ok := st.(interface{ WriteStats() sqlite.WriteStats })
	if !ok {
		e.Discard()
		return
	}
	writeFields(e, ws.WriteStats()).Msg("store write stats")
}

func writeFields(e *zerolog.Event, s sqlite.WriteStats) *zerolog.Event {
	return e.Int64("write_transactions", s.Transactions).
		Float64("write_wait_ms", millis(s.Waited)).
		Float64("write_lock_ms", millis(s.Held)).
		Float64("write_lock_cpu_ms", millis(s.HeldCPU))
}

// logProcessStats logs the CPU time of a worker or service (its own, and
// separately that of its jobs' processes it waited for) and, on SQLite,
// its write transactions.
func logProcessStats(log zerolog.Logger, st queue.Store) {
	e := log.Info()
	var self, children syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &self) == nil && syscall.Getrusage(syscall.RUSAGE_CHILDREN, &children) == nil {
		e = e.Float64("cpu_user_ms", millis(time.Duration(self.Utime.Nano()))).
			Float64("cpu_system_ms", millis(time.Duration(self.Stime.Nano()))).
			Float64("children_cpu_user_ms", millis(time.Duration(children.Utime.Nano()))).
			Float64("children_cpu_system_ms", millis(time.Duration(children.Stime.Nano())))
	}
	if ws, ok := st.(interface{ WriteStats() sqlite.WriteStats }); ok {
		e = writeFields(e, ws.WriteStats())
	}
	e.Msg("process stats")
}

func millis(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
