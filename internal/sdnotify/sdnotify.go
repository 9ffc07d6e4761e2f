// Package sdnotify tells systemd how a service is doing, with the few lines
// of the sd_notify protocol: datagrams such as "READY=1" sent to the unix
// socket named by $NOTIFY_SOCKET (a leading "@" names an abstract socket),
// and keep-alives at half the interval systemd asks for in $WATCHDOG_USEC.
// Outside systemd (no NOTIFY_SOCKET) every call does nothing.
package sdnotify

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"time"
)

// Messages of the protocol that queuectl sends.
const (
	Ready     = "READY=1"
	Stopping  = "STOPPING=1"
	Reloading = "RELOADING=1"
	Watchdog  = "WATCHDOG=1"
)

// Notifier sends notifications to one socket. The zero value (and a nil
// *Notifier) sends nothing.
type Notifier struct {
	addr     *net.UnixAddr
	watchdog time.Duration
}

// New reads NOTIFY_SOCKET, WATCHDOG_USEC and WATCHDOG_PID through getenv.
// pid is this process's id: a watchdog meant for another process is ignored.
func New(getenv func(string) string, pid int) *Notifier {
	n := &Notifier{}
	if s := getenv("NOTIFY_SOCKET"); s != "" {
		n.addr = &net.UnixAddr{Name: s, Net: "unixgram"}
	}
	usec, err := strconv.ParseInt(getenv("WATCHDOG_USEC"), 10, 64)
	if err == nil && usec > 0 {
		if p := getenv("WATCHDOG_PID"); p == "" || p == strconv.Itoa(pid) {
			n.watchdog = time.Duration(usec) * time.Microsecond
		}
	}
	return n
}

// Enabled reports whether notifications go anywhere.
func (n *Notifier) Enabled() bool { return n != nil && n.addr != nil }

// Notify sends one message (several "KEY=value" lines may be joined by
// newlines).
func (n *Notifier) Notify(state string) error {
	if !n.Enabled() {
		return nil
	}
	conn, err := net.DialUnix("unixgram", nil, n.addr)
	if err != nil {
		return fmt.Errorf("sd_notify: %w", err)
	}
	defer conn.Close()
	if _, err := conn.Write([]byte(state)); err != nil {
		return fmt.Errorf("sd_notify: %w", err)
	}
	return nil
}

// WatchdogInterval is how often keep-alives are due (half of what systemd
// allows), or 0 when no watchdog is set for this process.
func (n *Notifier) WatchdogInterval() time.Duration {
	if !n.Enabled() {
		return 0
	}
	return n.watchdog / 2
}

// KeepAlive sends WATCHDOG=1 at the watchdog interval until ctx ends;
// healthy is asked before each one, so a stuck service stops pinging and
// systemd restarts it. It returns at once when no watchdog is set.
func (n *Notifier) KeepAlive(ctx context.Context, healthy func(context.Context) error, onErr func(error)) {
	every := n.WatchdogInterval()
	if every <= 0 {
		return
	}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if err := healthy(ctx); err != nil {
			onErr(fmt.Errorf("watchdog: not healthy, skipping the keep-alive: %w", err))
			continue
		}
		if err := n.Notify(Watchdog); err != nil {
			onErr(err)
		}
	}
}
