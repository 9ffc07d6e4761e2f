package queue

// Processes is what the engine needs from this host's process table: its
// own identity (boot id, process start token), whether a worker recorded
// earlier still runs here, and stopping what a lost attempt left behind.
// internal/proc implements it; the command wiring injects it, so this
// package depends on no operating-system specifics.
type Processes interface {
	// BootID identifies this boot of the host; "" when unknown, and then
	// workers are judged by their heartbeats only.
	BootID() string
	// StartTime is an opaque token of when process pid started, comparable
	// only on the same host and boot (it guards against reused pids).
	StartTime(pid int) (uint64, error)
	// Alive reports whether the process pid with start token start still runs.
	Alive(pid int, start uint64) bool
	// KillByEnv kills every process whose environment holds all entries
	// ("KEY=VALUE"; "KEY?=VALUE" also holds without KEY), with the process
	// groups they lead, and reports how many it killed.
	KillByEnv(entries ...string) (int, error)
}

// noProcesses knows nothing of the host: workers are judged by their
// heartbeats only and leftover processes of lost attempts are not killed.
type noProcesses struct{}

func (noProcesses) BootID() string                   { return "" }
func (noProcesses) StartTime(int) (uint64, error)    { return 0, nil }
func (noProcesses) Alive(int, uint64) bool           { return true }
func (noProcesses) KillByEnv(...string) (int, error) { return 0, nil }
