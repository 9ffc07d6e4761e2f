package proc

import "time"

// Host is this host's process table as the job engine uses it (it
// satisfies queue.Processes; the command wiring checks that, so that this
// package, and the executor above it, know nothing of the queue).
type Host struct{}

// BootID calls BootID.
func (Host) BootID() string { return BootID() }

// StartTime calls StartTime.
func (Host) StartTime(pid int) (uint64, error) { return StartTime(pid) }

// Alive calls Alive.
func (Host) Alive(pid int, start uint64) bool { return Alive(pid, start) }

// KillByEnv calls KillByEnv.
func (Host) KillByEnv(entries ...string) (int, error) { return KillByEnv(entries...) }

// Usage is what a process has used so far (ReadUsage).
type Usage struct {
	User, System           time.Duration // its own CPU time
	ChildUser, ChildSystem time.Duration // of the children it waited for
	Started                time.Duration // when it started, after the system booted
	VirtualBytes           uint64
	ResidentBytes          uint64
}
