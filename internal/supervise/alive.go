package supervise

import (
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
