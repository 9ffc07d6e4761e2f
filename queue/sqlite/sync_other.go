//go:build !linux

package sqlite

import "os"

// syncData flushes f to the device.
func syncData(f *os.File) error { return f.Sync() }
