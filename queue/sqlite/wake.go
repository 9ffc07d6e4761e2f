package sqlite

import (
	"context"
	"os"
	"sync"
)

// waker signals idle workers in other processes through a small file
// beside the database: writers that make work runnable write to it, and
// watchers (inotify on Linux) wake up. It is only a hint; the engine
// also polls, so a lost signal costs latency, never a job.
type waker struct {
	path string
	db   string // the database it is beside

	mu     sync.Mutex
	f      *os.File // opened lazily for writing
	subs   map[chan struct{}]struct{}
	watch  *watcher
	closed bool
}

func newWaker(path, db string) *waker {
	return &waker{path: path, db: db, subs: map[chan struct{}]struct{}{}}
}

// notify touches the wake file. Errors are ignored: polling covers them.
func (w *waker) notify() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return
	}
	if w.f == nil {
		f, err := openSideFile(w.path, w.db, os.O_WRONLY)
		if err != nil {
			return
		}
		w.f = f
	}
	_, _ = w.f.WriteAt([]byte{'1'}, 0)
	// Wake this process's own subscribers directly as well.
	w.broadcastLocked()
}

func (w *waker) broadcastLocked() {
	for c := range w.subs {
		select {
		case c <- struct{}{}:
		default:
		}
	}
}

func (w *waker) broadcast() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.broadcastLocked()
}

// subscribe returns a channel that receives a value after any notify, in
// any process, until ctx ends.
func (w *waker) subscribe(ctx context.Context) (<-chan struct{}, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.watch == nil && !w.closed {
		// Make sure the file exists so it can be watched.
		if f, err := openSideFile(w.path, w.db, os.O_WRONLY); err == nil {
			f.Close()
		}
		watch, err := startWatcher(w.path, w.broadcast)
		if err == nil {
			w.watch = watch
		}
		// Without a watcher, subscribers still get in-process wake-ups and
		// the engine's polling.
	}
	c := make(chan struct{}, 1)
	out := make(chan struct{})
	w.subs[c] = struct{}{}
	go func() {
		defer close(out)
		defer func() {
			w.mu.Lock()
			delete(w.subs, c)
			w.mu.Unlock()
		}()
		for {
			select {
			case <-ctx.Done():
				return
			case <-c:
				select {
				case out <- struct{}{}:
				case <-ctx.Done():
					return
				}
			}
		}
	}()
	return out, nil
}

func (w *waker) close() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.closed = true
	if w.f != nil {
		w.f.Close()
	}
	if w.watch != nil {
		w.watch.close()
	}
}

// Wakeups implements queue.Store.
func (s *Store) Wakeups(ctx context.Context) (<-chan struct{}, error) {
	return s.wake.subscribe(ctx)
}
