package sqlite

import (
	"context"
	"os"
	"path/filepath"
	"strings"
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

// FILE created by someone else while the copy was made (another backup to
// the same name) is left alone, and the error says FILE exists, as when it
// existed from the start, rather than naming the temporary copy.
func TestBackupToAFileThatAppearedMeanwhile(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(context.Background(), filepath.Join(dir, "queue.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	target := filepath.Join(dir, "backup.db")
	s.syncFile = func(f *os.File) error {
		if err := os.WriteFile(target, []byte("theirs"), 0o600); err != nil {
			t.Fatal(err)
		}
		return syncData(f)
	}
	err = s.Backup(context.Background(), target)
	want := "backup: " + target + " exists; choose a new file"
	if err == nil || err.Error() != want {
		t.Fatalf("backup to a file that appeared meanwhile: %v; want %q", err, want)
	}
	if b, _ := os.ReadFile(target); string(b) != "theirs" {
		t.Fatalf("the file that appeared meanwhile holds %q", b)
	}
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if strings.Contains(e.Name(), ".partial-") {
			t.Fatalf("the partial copy %s was left", e.Name())
		}
	}
}
