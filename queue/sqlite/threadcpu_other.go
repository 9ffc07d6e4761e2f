//go:build !linux

package sqlite

import "time"

// threadCPU is unknown here: write transactions count no CPU time.
func threadCPU() (time.Duration, bool) { return 0, false }
