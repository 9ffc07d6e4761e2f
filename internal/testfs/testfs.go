// Package testfs gives tests real filesystems that misbehave: a small
// tmpfs that fills up, and one turned read-only. Both need the kernel's
// mount permission (root). Without it the test skips and says why, or
// fails under CI=true, so a CI machine cannot pass by running none of them.
//
// A real filesystem is used rather than a simulation inside SQLite (such as
// PRAGMA max_page_count): running out of space while writing the -wal file,
// or finding no way to create the -shm file, are what happens in the field
// and what the stores must survive.
package testfs

import (
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// Small mounts a tmpfs of the given size (e.g. "4m") on a new directory,
// unmounted at cleanup, and returns the directory.
func Small(t testing.TB, size string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "mnt")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size="+size+",mode=0700", "tmpfs", dir).CombinedOutput()
	if err != nil {
		msg := "mounting a small tmpfs needs root: " + strings.TrimSpace(string(out))
		if os.Getenv("CI") == "true" {
			t.Fatal("CI=true, so this is a failure: " + msg)
		}
		t.Skip(msg)
	}
	t.Cleanup(func() {
		if out, err := exec.Command("umount", "-l", dir).CombinedOutput(); err != nil {
			t.Errorf("umount %s: %v %s", dir, err, out)
		}
	})
	return dir
}

// ReadOnly remounts a directory from Small read-only.
func ReadOnly(t testing.TB, dir string) {
	t.Helper()
	if out, err := exec.Command("mount", "-o", "remount,ro", dir).CombinedOutput(); err != nil {
		t.Fatalf("remount %s read-only: %v %s", dir, err, out)
	}
}

// Fill writes to path until its filesystem has no space left.
func Fill(t testing.TB, path string) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	buf := make([]byte, 64*1024)
	for {
		if _, err := f.Write(buf); err != nil {
			if errors.Is(err, syscall.ENOSPC) {
				return
			}
			t.Fatal(err)
		}
	}
}

// Copy copies a file, creating the target owner-only.
func Copy(t testing.TB, from, to string) {
	t.Helper()
	in, err := os.Open(from)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	out, err := os.OpenFile(to, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(out, in); err != nil {
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
}
