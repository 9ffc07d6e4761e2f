package postgres

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
)

// Listener timings. The listener pings its connection when no notification
// arrived for listenIdle, so a connection that died silently is noticed.
var (
	reconnectMin = 100 * time.Millisecond
	reconnectMax = 5 * time.Second
	listenIdle   = 30 * time.Second
	pingTimeout  = 10 * time.Second
)

var errClosed = errors.New("store is closed")

// waker fans LISTEN notifications out to subscribers. It holds one
// dedicated connection (not from the pool: a pooled connection would be
// handed to queries), opened by the first subscriber and re-opened with
// backoff whenever it drops. Notifications sent while it is down are lost,
// so it delivers one wake-up after each reconnect.
type waker struct {
	cfg     *pgx.ConnConfig
	channel string
	idle    time.Duration // listenIdle when the store opened

	ctx    context.Context // ends when the store closes
	cancel context.CancelFunc
	wg     sync.WaitGroup

	startMu sync.Mutex // serializes starting the listener
	running bool
	closed  bool

	mu   sync.Mutex // guards subs; sends and closes happen under it
	subs map[chan struct{}]struct{}
}

func newWaker(cfg *pgx.ConnConfig, channel string) *waker {
	ctx, cancel := context.WithCancel(context.Background())
	return &waker{cfg: cfg, channel: channel, idle: listenIdle, ctx: ctx, cancel: cancel, subs: map[chan struct{}]struct{}{}}
}

// subscribe returns a channel that receives a (coalesced) value after any
// notification on the channel, until ctx ends or the store closes. The
// first call opens the listening connection and fails if it cannot, so
// that a change committed after subscribe returns is announced.
func (w *waker) subscribe(ctx context.Context) (<-chan struct{}, error) {
	if err := w.start(ctx); err != nil {
		return nil, err
	}
	c := make(chan struct{}, 1)
	w.mu.Lock()
	w.subs[c] = struct{}{}
	w.mu.Unlock()
	go func() {
		select {
		case <-ctx.Done():
		case <-w.ctx.Done():
		}
		w.mu.Lock()
		delete(w.subs, c)
		close(c)
		w.mu.Unlock()
	}()
	return c, nil
}

func (w *waker) start(ctx context.Context) error {
	w.startMu.Lock()
	defer w.startMu.Unlock()
	if w.closed {
		return errClosed
	}
	if w.running {
		return nil
	}
	// Connect under both the caller's context and the store's, so Close
	// does not wait for a slow connect.
	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stop := context.AfterFunc(w.ctx, cancel)
	defer stop()
	conn, err := w.connect(cctx)
	if err != nil {
		return fmt.Errorf("listen for wake-ups: %w", err)
	}
	w.running = true
	w.wg.Add(1)
	go w.loop(conn)
	return nil
}

// connect opens the listening connection and subscribes to the channel.
func (w *waker) connect(ctx context.Context) (*pgx.Conn, error) {
	conn, err := pgx.ConnectConfig(ctx, w.cfg)
	if err != nil {
		return nil, err
	}
	if _, err := conn.Exec(ctx, "LISTEN "+pgx.Identifier{w.channel}.Sanitize()); err != nil {
		conn.Close(context.Background())
		return nil, err
	}
	return conn, nil
}

// loop waits for notifications until the store closes, reconnecting with
// exponential backoff after a failure.
func (w *waker) loop(conn *pgx.Conn) {
	defer w.wg.Done()
	backoff := reconnectMin
	for {
		if conn == nil {
			t := time.NewTimer(backoff)
			select {
			case <-w.ctx.Done():
				t.Stop()
				return
			case <-t.C:
			}
			c, err := w.connect(w.ctx)
			if err != nil {
				backoff = min(backoff*2, reconnectMax)
				continue
			}
			conn, backoff = c, reconnectMin
			w.broadcast() // notifications may have been lost meanwhile
		}
		w.listen(conn)
		closeCtx, cancel := context.WithTimeout(context.Background(), time.Second)
		conn.Close(closeCtx)
		cancel()
		conn = nil
		if w.ctx.Err() != nil {
			return
		}
	}
}

// listen delivers notifications from conn until it fails or the store
// closes.
func (w *waker) listen(conn *pgx.Conn) {
	for {
		wctx, cancel := context.WithTimeout(w.ctx, w.idle)
		_, err := conn.WaitForNotification(wctx)
		timedOut := err != nil && wctx.Err() != nil && w.ctx.Err() == nil
		cancel()
		switch {
		case err == nil:
			w.broadcast()
		case timedOut && !conn.IsClosed():
			// Quiet for a while: make sure the connection is still alive.
			pctx, cancel := context.WithTimeout(w.ctx, pingTimeout)
			err = conn.Ping(pctx)
			cancel()
			if err != nil {
				return
			}
		default:
			return
		}
	}
}

// broadcast wakes every subscriber without blocking; a subscriber that has
// not taken the previous wake-up keeps just one.
func (w *waker) broadcast() {
	w.mu.Lock()
	defer w.mu.Unlock()
	for c := range w.subs {
		select {
		case c <- struct{}{}:
		default:
		}
	}
}

func (w *waker) close() {
	w.cancel()
	w.startMu.Lock()
	w.closed = true
	w.startMu.Unlock()
	w.wg.Wait()
}

// Wakeups implements queue.Store. The first call opens the listening
// connection.
func (s *Store) Wakeups(ctx context.Context) (<-chan struct{}, error) {
	c, err := s.wake.subscribe(ctx)
	if err != nil {
		return nil, fmt.Errorf("wakeups: %w", err)
	}
	return c, nil
}
