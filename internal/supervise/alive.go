package supervise

import (
	"context"
	"fmt"
	"time"

	"github.com/queuectl/queuectl/internal/proc"
	"github.com/queuectl/queuectl/internal/view"
	"github.com/queuectl/queuectl/queue"
)

// Alive reports whether the registered worker w still runs, as seen from
// host: one of this host and boot (proc.BootID) by its process, exactly;
// one elsewhere by its heartbeat (view.Heard). A worker killed with no
// other worker left to unregister it stays registered until one starts.
func Alive(w *queue.WorkerInfo, host string, now time.Time) bool {
	if w.Host == host && w.BootID == proc.BootID() {
		return proc.Alive(w.PID, w.ProcStart)
	}
	return view.Heard(w, now)
}

// HeartbeatNow is the time heartbeats are judged by (Alive, Stop): the
// database's when the store stamps them with its own clock
// (queue.DatabaseClock, PostgreSQL), so that a host whose clock runs ahead
// or behind takes neither a live worker of another host for silent nor a
// silent one for live; else now.
func HeartbeatNow(ctx context.Context, st queue.Store, now time.Time) (time.Time, error) {
	dc, ok := st.(queue.DatabaseClock)
	if !ok {
		return now, nil
	}
	t, err := dc.DatabaseNow(ctx)
	if err != nil {
		return time.Time{}, fmt.Errorf("read the database clock: %w", err)
	}
	return t, nil
}
