//go:build !linux

package sqlite

// threadCPU is unknown here: write transactions count no CPU time.
func threadCPU() threadMark { return threadMark{} }
