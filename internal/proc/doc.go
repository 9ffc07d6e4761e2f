// Package proc identifies this host and its processes, so that a supervisor
// can tell whether a worker recorded earlier (by pid, process start time and
// boot id) is still running on this host, and can clean up the processes a
// dead worker's job left behind: those carrying the job's environment
// variables (KillByEnv), never an unrelated process that happens to have
// been given a reused pid. It also reads what a process has used so far
// (ReadUsage: CPU time, memory, start), for /metrics and the benchmarks.
//
// The identity of a process is the pair (pid, start time); the identity of a
// host run is its boot id. A pid recorded under a different boot id is
// meaningless. Start times are opaque tokens, comparable only on the same
// host and boot. In a container the boot id also names its pid namespace:
// containers share the host's boot id and may share its host name, but a
// pid recorded in one namespace is meaningless in another.
//
// It works fully on Linux (it reads /proc). On other Unix systems BootID
// returns "", StartTime returns 0 for every existing process (so the
// pid-reuse guard is unavailable), liveness falls back to kill(pid, 0) and
// ReadUsage is unsupported.
//
// Zombies (exited but not yet reaped processes) are treated as dead
// everywhere in this package: they run no code and hold no resources besides
// their pid, and in containers whose init does not reap orphans they may stay
// around forever.
package proc
