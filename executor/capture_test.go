package executor

import (
	"bytes"
	"math/rand/v2"
	"strings"
	"testing"
)

// want is the reference behaviour of capture: everything when it fits,
// otherwise head half + marker + tail half.
func want(data []byte, limit int) []byte {
	if len(data) <= limit {
		return data
	}
	h := limit / 2
	t := limit - h
	var b bytes.Buffer
	b.Write(data[:h])
	b.WriteString(droppedMarker(int64(len(data) - limit)))
	b.Write(data[len(data)-t:])
	return b.Bytes()
}

func TestCaptureHeadTailMarker(t *testing.T) {
	c := newCapture(8)
	for _, s := range []string{"AAAA", "BBBBBBBBBB", "CC", "ZZZZ"} {
		n, err := c.Write([]byte(s))
		if n != len(s) || err != nil {
			t.Fatalf("Write(%q) = %d, %v", s, n, err)
		}
	}
	// 20 bytes written, 8 kept: head "AAAA", tail "CCZZZZ"'s last 4 = "ZZZZ".
	wantOut := "AAAA" + "\n[queuectl: 12 bytes of output dropped]\n" + "ZZZZ"
	if got := string(c.Bytes()); got != wantOut {
		t.Fatalf("Bytes() = %q, want %q", got, wantOut)
	}
	if d := c.Dropped(); d != 12 {
		t.Fatalf("Dropped() = %d, want 12", d)
	}
}

func TestCaptureFitsExactly(t *testing.T) {
	c := newCapture(10)
	c.Write([]byte("0123"))
	c.Write([]byte("456789"))
	if got := string(c.Bytes()); got != "0123456789" || c.Dropped() != 0 {
		t.Fatalf("Bytes() = %q, Dropped() = %d", got, c.Dropped())
	}
	c.Write([]byte("X"))
	if got, w := string(c.Bytes()), "01234"+droppedMarker(1)+"6789X"; got != w {
		t.Fatalf("after overflow Bytes() = %q, want %q", got, w)
	}
}

func TestCaptureEmpty(t *testing.T) {
	c := newCapture(10)
	if b := c.Bytes(); len(b) != 0 || c.Dropped() != 0 {
		t.Fatalf("empty capture: %q, %d", b, c.Dropped())
	}
}

// TestCaptureMatchesReference writes patterned data in random chunkings and
// compares with the reference for several limits, including odd ones and
// limits smaller than a single write.
func TestCaptureMatchesReference(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, limit := range []int{1, 2, 3, 7, 64, 1000, 4097} {
		for _, size := range []int{0, 1, limit - 1, limit, limit + 1, 3 * limit, 10*limit + 13} {
			if size < 0 {
				continue
			}
			data := make([]byte, size)
			for i := range data {
				data[i] = 'a' + byte(i%26)
			}
			for trial := 0; trial < 5; trial++ {
				c := newCapture(int64(limit))
				for rest := data; len(rest) > 0; {
					n := 1 + rng.IntN(max(1, min(len(rest), 2*limit)))
					if trial == 0 {
						n = len(rest) // one big write
					}
					c.Write(rest[:n])
					rest = rest[n:]
				}
				if got, w := c.Bytes(), want(data, limit); !bytes.Equal(got, w) {
					t.Fatalf("limit %d size %d trial %d:\n got %q\nwant %q", limit, size, trial, got, w)
				}
				if d, w := c.Dropped(), int64(max(0, size-limit)); d != w {
					t.Fatalf("limit %d size %d: Dropped() = %d, want %d", limit, size, d, w)
				}
			}
		}
	}
}

func TestCaptureBoundedMemory(t *testing.T) {
	const limit = 1 << 16
	c := newCapture(limit)
	chunk := []byte(strings.Repeat("x", 10000))
	for i := 0; i < 1000; i++ {
		c.Write(chunk)
	}
	if cap(c.head) > limit/2 || cap(c.tail) > limit-limit/2 {
		t.Fatalf("buffers grew beyond the cap: head cap %d, tail cap %d", cap(c.head), cap(c.tail))
	}
	if got := c.Dropped(); got != 10000*1000-limit {
		t.Fatalf("Dropped() = %d", got)
	}
}

// TestRemainderCompletesWhatAReaderSaw checks that a reader who saw the
// first seen bytes of the raw output and then prints Remainder ends up with
// the raw output, or, when the cap dropped bytes the reader did not see,
// with everything it saw or the cap kept and one marker for the rest.
func TestRemainderCompletesWhatAReaderSaw(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for range 2000 {
		limit := 1 + r.IntN(40)
		data := make([]byte, r.IntN(100))
		for i := range data {
			data[i] = byte('a' + r.IntN(26))
		}
		c := newCapture(int64(limit))
		c.Write(data)
		seen := r.IntN(len(data) + 1)
		got := append(append([]byte(nil), data[:seen]...), Remainder(c.Bytes(), c.Dropped(), int64(seen))...)
		exp := data
		if len(data) > limit {
			head, tailStart := limit/2, len(data)-(limit-limit/2)
			if kept := max(seen, head); kept < tailStart {
				exp = append(append(append([]byte(nil), data[:kept]...), droppedMarker(int64(tailStart-kept))...), data[tailStart:]...)
			}
		}
		if !bytes.Equal(got, exp) {
			t.Fatalf("limit %d, %d bytes, seen %d: got %q, want %q", limit, len(data), seen, got, exp)
		}
	}
}
