package sqlite

import (
	"context"
	"os"
	"path/filepath"
	"testing"
)

// A backup stopped while its copy is being flushed to the device (which
// takes a while for a large database) writes nothing: neither the file nor
// the partial copy is left.
func TestBackupStoppedDuringTheSyncWritesNothing(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(context.Background(), filepath.Join(dir, "queue.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	synced := false
	s.syncFile = func(f *os.File) error {
		synced = true
		stop() // a signal, while the copy is flushed
		return syncData(f)
	}
	out := filepath.Join(dir, "out")
	if err := os.Mkdir(out, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := s.Backup(ctx, filepath.Join(out, "backup.db")); err == nil {
		t.Fatal("a backup stopped during its sync succeeded")
	}
	if !synced {
		t.Fatal("the backup synced no copy")
	}
	if left, _ := os.ReadDir(out); len(left) != 0 {
		t.Fatalf("a stopped backup left %v", left)
	}
}
