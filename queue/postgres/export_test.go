package postgres

import "time"

// ClaimSQL and ClaimArgs expose the claim statement for the plan test.
var (
	ClaimSQL  = claimSQL
	ClaimArgs = claimArgs
)

// SetListenIdle changes how long the listener waits quietly before it pings
// its connection, for one (non-parallel) test; restore undoes it.
func SetListenIdle(d time.Duration) (restore func()) {
	old := listenIdle
	listenIdle = d
	return func() { listenIdle = old }
}
