//go:build !linux

package postgres

import (
	"syscall"
	"time"
)

// setUserTimeout does nothing where TCP_USER_TIMEOUT is not: a statement on
// a connection whose packets are dropped waits for the system's TCP.
func setUserTimeout(syscall.RawConn, time.Duration) error { return nil }
