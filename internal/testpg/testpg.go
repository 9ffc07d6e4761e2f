// Package testpg holds what the PostgreSQL tests of several packages share:
// in CI a missing server fails the test instead of skipping it, so a CI
// machine without PostgreSQL cannot pass by running none of its tests.
package testpg

import (
	"os"
	"testing"
)

// Unavailable skips t because the PostgreSQL server is not there, or fails
// it when CI=true.
func Unavailable(t testing.TB, format string, args ...any) {
	t.Helper()
	if os.Getenv("CI") == "true" {
		t.Fatalf("CI=true, so this is a failure: "+format, args...)
	}
	t.Skipf(format, args...)
}
