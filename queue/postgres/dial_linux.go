package postgres

import (
	"errors"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

func setUserTimeout(c syscall.RawConn, d time.Duration) error {
	var set error
	err := c.Control(func(fd uintptr) {
		set = unix.SetsockoptInt(int(fd), unix.IPPROTO_TCP, unix.TCP_USER_TIMEOUT, int(d.Milliseconds()))
	})
	return errors.Join(err, set)
}
