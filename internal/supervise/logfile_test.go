package supervise

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// A detached worker's log rotates by size and keeps at most Backups rotated
// files besides the current one, however much it writes.
func TestOpenLogRotatesAndBoundsFiles(t *testing.T) {
	dir := t.TempDir()
	r := LogRotation{MaxSizeMB: 1, Backups: 2}
	w := OpenLog(dir, 4242, r)
	line := append(bytes.Repeat([]byte("x"), 1023), '\n')
	for range 5 * 1024 { // 5 MB in 1 KB lines: four rotations at 1 MB
		if _, err := w.Write(line); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}

	cur, err := os.Stat(LogPath(dir, 4242))
	if err != nil {
		t.Fatal(err)
	}
	if cur.Size() > 1<<20 {
		t.Errorf("current log is %d bytes, over the 1 MB limit", cur.Size())
	}
	if cur.Mode().Perm() != 0o600 {
		t.Errorf("log file mode %v, want owner-only", cur.Mode().Perm())
	}
	// Old files are removed in the background after a rotation: wait for
	// the count to come down to the bound.
	var files []string
	deadline := time.Now().Add(10 * time.Second)
	for {
		files, _ = filepath.Glob(filepath.Join(dir, "worker-4242*.log"))
		if len(files) <= r.Backups+1 || time.Now().After(deadline) {
			break
		}
		time.Sleep(10 * time.Millisecond) // polling the directory, with a deadline
	}
	if len(files) != r.Backups+1 {
		t.Fatalf("%d log files, want the current one and %d rotated: %v", len(files), r.Backups, files)
	}
}

func TestLogRotationCheck(t *testing.T) {
	for _, tc := range []struct {
		r    LogRotation
		want string
	}{
		{LogRotation{MaxSizeMB: 0, Backups: 1}, "--log-max-size 0: must be at least 1 (megabytes)"},
		{LogRotation{MaxSizeMB: 1, Backups: 0}, "--log-backups 0: must be at least 1"},
	} {
		err := tc.r.Check()
		if err == nil || err.Error() != tc.want {
			t.Errorf("%+v: got %v, want %q", tc.r, err, tc.want)
		}
	}
	if err := DefaultLogRotation.Check(); err != nil {
		t.Errorf("default: %v", err)
	}
}
