package supervise

import (
	"fmt"
	"io"
	"path/filepath"

	"gopkg.in/natefinch/lumberjack.v2"
)

// LogRotation bounds a detached worker's log: the current file grows to
// MaxSizeMB megabytes, then it is renamed with a timestamp and a new one
// starts; only the newest Backups renamed files are kept, so one worker
// never holds more than (Backups+1) × MaxSizeMB on disk.
type LogRotation struct {
	MaxSizeMB int
	Backups   int
}

// DefaultLogRotation is what worker start uses unless told otherwise.
var DefaultLogRotation = LogRotation{MaxSizeMB: 10, Backups: 3}

// Check reports a setting a worker would refuse, naming its flag.
func (r LogRotation) Check() error {
	if r.MaxSizeMB < 1 {
		return fmt.Errorf("--log-max-size %d: must be at least 1 (megabytes)", r.MaxSizeMB)
	}
	if r.Backups < 1 {
		return fmt.Errorf("--log-backups %d: must be at least 1", r.Backups)
	}
	return nil
}

// LogPath is the log file of the detached worker with this pid.
func LogPath(dir string, pid int) string {
	return filepath.Join(dir, fmt.Sprintf("worker-%d.log", pid))
}

// OpenLog returns the rotating writer a detached worker logs through, at
// LogPath(dir, pid). Files are created owner-only. The rotation is
// lumberjack's: renaming, pruning and reopening are subtle to get right
// across crashes, and it is small, has no dependencies and is widely used.
func OpenLog(dir string, pid int, r LogRotation) io.WriteCloser {
	return &lumberjack.Logger{
		Filename:   LogPath(dir, pid),
		MaxSize:    r.MaxSizeMB,
		MaxBackups: r.Backups,
	}
}
