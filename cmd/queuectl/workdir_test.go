package main

import (
	"errors"
	"strings"
	"testing"

	"github.com/queuectl/queuectl/queue"
)

// TestInCurrentDir: jobs without a dir get the current directory, relative
// dirs are resolved against it, absolute ones are kept, and the directory
// is looked up once however many jobs need it.
func TestInCurrentDir(t *testing.T) {
	calls := 0
	wd := workDir(func() (string, error) { calls++; return "/home/u/app", nil })
	jobs := []queue.NewJob{{Dir: ""}, {Dir: "sub/../build"}, {Dir: "/srv/data"}, {Dir: ""}}
	for i := 0; i < len(jobs); i += 2 {
		if err := inCurrentDir(jobs[i:i+2], wd); err != nil {
			t.Fatal(err)
		}
	}
	want := []string{"/home/u/app", "/home/u/app/build", "/srv/data", "/home/u/app"}
	for i, j := range jobs {
		if j.Dir != want[i] {
			t.Errorf("job %d: dir %q, want %q", i, j.Dir, want[i])
		}
	}
	if calls != 1 {
		t.Errorf("current directory read %d times, want once", calls)
	}

	gone := workDir(func() (string, error) { return "", errors.New("no such file or directory") })
	if err := inCurrentDir([]queue.NewJob{{Dir: "/srv/data"}}, gone); err != nil {
		t.Errorf("a job with an absolute dir needs no current directory: %v", err)
	}
	err := inCurrentDir([]queue.NewJob{{Dir: ""}}, gone)
	if err == nil || !strings.Contains(err.Error(), "current directory") {
		t.Errorf("error when the current directory is gone: %v", err)
	}
}
