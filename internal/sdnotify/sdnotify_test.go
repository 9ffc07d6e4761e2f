package sdnotify

import (
	"context"
	"errors"
	"net"
	"path/filepath"
	"strconv"
	"testing"
	"time"
)

// listen makes the socket systemd would, and returns its path and a
// function reading the next datagram.
func listen(t *testing.T, name string) (string, func() string) {
	t.Helper()
	conn, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: name, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return name, func() string {
		t.Helper()
		conn.SetReadDeadline(time.Now().Add(5 * time.Second))
		buf := make([]byte, 4096)
		n, err := conn.Read(buf)
		if err != nil {
			t.Fatalf("read notification: %v", err)
		}
		return string(buf[:n])
	}
}

func env(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

func TestNotify(t *testing.T) {
	for _, tc := range []struct{ name, socket string }{
		{"path", filepath.Join(t.TempDir(), "notify.sock")},
		{"abstract", "@queuectl-test-" + strconv.FormatInt(time.Now().UnixNano(), 36)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path, read := listen(t, tc.socket)
			n := New(env(map[string]string{"NOTIFY_SOCKET": path}), 1)
			if !n.Enabled() {
				t.Fatal("not enabled")
			}
			for _, msg := range []string{Ready, Reloading, Stopping} {
				if err := n.Notify(msg); err != nil {
					t.Fatal(err)
				}
				if got := read(); got != msg {
					t.Fatalf("got %q, want %q", got, msg)
				}
			}
		})
	}
}

func TestOutsideSystemd(t *testing.T) {
	var nilN *Notifier
	for _, n := range []*Notifier{New(env(nil), 1), nilN} {
		if n.Enabled() || n.Notify(Ready) != nil || n.WatchdogInterval() != 0 {
			t.Fatalf("%+v: notifications without NOTIFY_SOCKET", n)
		}
	}
}

func TestWatchdog(t *testing.T) {
	path, read := listen(t, filepath.Join(t.TempDir(), "notify.sock"))
	tests := []struct {
		env  map[string]string
		want time.Duration
	}{
		{map[string]string{"NOTIFY_SOCKET": path, "WATCHDOG_USEC": "200000"}, 100 * time.Millisecond},
		{map[string]string{"NOTIFY_SOCKET": path, "WATCHDOG_USEC": "200000", "WATCHDOG_PID": "7"}, 100 * time.Millisecond},
		{map[string]string{"NOTIFY_SOCKET": path, "WATCHDOG_USEC": "200000", "WATCHDOG_PID": "8"}, 0}, // another process's
		{map[string]string{"NOTIFY_SOCKET": path, "WATCHDOG_USEC": "x"}, 0},
		{map[string]string{"WATCHDOG_USEC": "200000"}, 0},
	}
	for _, tt := range tests {
		if got := New(env(tt.env), 7).WatchdogInterval(); got != tt.want {
			t.Errorf("%v: interval %s, want %s", tt.env, got, tt.want)
		}
	}

	n := New(env(tests[0].env), 7)
	ctx, cancel := context.WithCancel(context.Background())
	healthy := make(chan error, 10)
	healthy <- errors.New("database down")
	var errs []error
	done := make(chan struct{})
	go func() {
		defer close(done)
		n.KeepAlive(ctx, func(context.Context) error {
			select {
			case err := <-healthy:
				return err
			default:
				return nil
			}
		}, func(err error) { errs = append(errs, err) })
	}()
	for range 2 {
		if got := read(); got != Watchdog {
			t.Fatalf("got %q, want %q", got, Watchdog)
		}
	}
	cancel()
	<-done
	if len(errs) != 1 {
		t.Fatalf("errors %v, want the one unhealthy check", errs)
	}
}
