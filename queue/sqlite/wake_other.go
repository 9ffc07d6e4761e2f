//go:build !linux

package sqlite

import "errors"

type watcher struct{}

// startWatcher is not available here; workers fall back to polling.
func startWatcher(string, func()) (*watcher, error) {
	return nil, errors.New("file watching is not supported on this platform")
}

func (w *watcher) close() {}
