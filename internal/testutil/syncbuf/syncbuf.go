// Package syncbuf owns the buffer tests collect output in while another
// goroutine or process writes it: a log, a background command's output.
package syncbuf

import (
	"bytes"
	"sync"
)

// Buffer is a bytes.Buffer that a writer and a reader may use at once.
type Buffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *Buffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

// String returns what was written so far.
func (b *Buffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}
