package storetest

import (
	"bytes"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/queuectl/queuectl/queue"
)

// testLiveOutput: a running attempt's output so far is saved only under
// its claim, read from another handle, kept to its tail, and gone once the
// attempt finishes.
func testLiveOutput(t *testing.T, open Opener) {
	s, other := open(t), open(t)
	insert(t, s, job(t, "a", nil))
	if _, err := other.LiveOutput(ctx(t), "a"); !errors.Is(err, queue.ErrNotFound) {
		t.Fatalf("live output of a pending job: %v, want ErrNotFound", err)
	}
	j := claim(t, s, "w1", 1, t0)[0]
	// The running attempt has no recorded output yet: the error says it runs.
	for _, n := range []int{0, j.Attempts} {
		if _, err := other.Output(ctx(t), "a", n); !errors.Is(err, queue.ErrNotFound) || !strings.Contains(err.Error(), "attempt 1 is running") {
			t.Fatalf("output %d of a running job: %v, want ErrNotFound saying attempt 1 is running", n, err)
		}
	}
	save := func(worker string, attempt int, out []byte, written int64) {
		t.Helper()
		err := s.SaveLiveOutput(ctx(t), queue.LiveOutput{JobID: "a", Worker: worker, Attempt: attempt, Output: out,
			Written: written, UpdatedAt: t0.Add(time.Second)})
		if err != nil {
			t.Fatalf("save live output: %v", err)
		}
	}
	save("w2", j.Attempts, []byte("not mine"), 8)
	save("w1", j.Attempts+1, []byte("another attempt"), 15)
	if _, err := other.LiveOutput(ctx(t), "a"); !errors.Is(err, queue.ErrNotFound) {
		t.Fatalf("live output saved without the claim: %v, want ErrNotFound", err)
	}
	save("w1", j.Attempts, []byte("step 1\n"), 7)
	save("w1", j.Attempts, []byte("step 1\nstep 2\n"), 14)
	got, err := other.LiveOutput(ctx(t), "a")
	if err != nil {
		t.Fatalf("live output: %v", err)
	}
	if string(got.Output) != "step 1\nstep 2\n" || got.Written != 14 || got.Attempt != j.Attempts || got.Worker != "w1" ||
		!got.UpdatedAt.Equal(t0.Add(time.Second)) {
		t.Fatalf("live output: %+v", got)
	}
	big := bytes.Repeat([]byte("x"), queue.LiveOutputMax+100)
	big[len(big)-1] = 'y'
	save("w1", j.Attempts, big, int64(len(big)))
	if got, _ := other.LiveOutput(ctx(t), "a"); len(got.Output) != queue.LiveOutputMax || got.Output[len(got.Output)-1] != 'y' {
		t.Fatalf("live output keeps the last %d bytes; got %d", queue.LiveOutputMax, len(got.Output))
	}
	finish(t, s, j, "w1", succeeded(t0.Add(2*time.Second), "step 1\nstep 2\n"), t0.Add(2*time.Second))
	if _, err := other.LiveOutput(ctx(t), "a"); !errors.Is(err, queue.ErrNotFound) {
		t.Fatalf("live output after the finish: %v, want ErrNotFound", err)
	}
	save("w1", j.Attempts, []byte("late"), 4)
	if _, err := other.LiveOutput(ctx(t), "a"); !errors.Is(err, queue.ErrNotFound) {
		t.Fatalf("live output saved after the finish: %v, want ErrNotFound", err)
	}
}
