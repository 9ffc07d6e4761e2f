package postgres

import (
	"context"
	"time"

	"github.com/queuectl/queuectl/queue"
)

// ClaimSQL and ClaimArgs expose the claim statement for the plan test,
// ClaimSettings the settings it runs with.
var (
	ClaimSQL  = claimSQL
	ClaimArgs = claimArgs
	// LimitedClaimSQL is the claim of a transaction that limits queues.
	LimitedClaimSQL = limitedClaimSQL
)

const ClaimSettings = claimSettings

// SetListenIdle changes how long the listener waits quietly before it pings
// its connection, for one (non-parallel) test; restore undoes it.
func SetListenIdle(d time.Duration) (restore func()) {
	old := listenIdle
	listenIdle = d
	return func() { listenIdle = old }
}

// Setting reads a setting on a connection of the store's pool.
func (s *Store) Setting(ctx context.Context, name string) (string, error) {
	var v string
	err := s.pool.QueryRow(ctx, `SELECT current_setting($1)`, name).Scan(&v)
	return v, err
}

// LongestSQL and RunTimesSQL expose the statistics' reads, DeleteMatch
// retention's, PruneMatch output pruning's, and CountImportedSQL the count
// of attempts written directly, for the plan tests.
var (
	LongestSQL       = longest
	RunTimesSQL      = runTimes
	DeleteMatch      = deleteMatch
	PruneMatch       = pruneMatch
	PruneChange      = pruneChange
	CountImportedSQL = countImported
)

// TakenID is takenID, for its test.
var TakenID = takenID

// ListSQL is the statement ListJobs runs for p (without a cursor) and its
// parameters, for the plan test.
func ListSQL(p queue.ListParams) (string, []any) { return listQuery(p, nil) }

// FinishAllSQL is the statement that records a batch of outcomes, and
// FinishArgs its parameters for a batch, for the plan test.
const FinishAllSQL = finishAll

func FinishArgs(fs []queue.Finish) []any {
	var c finishColumns
	for _, f := range fs {
		c.add(f)
	}
	return c.args()
}

// RowOutcomes are the outcomes finishAll keeps on a job's row.
var RowOutcomes = rowOutcomes

// NextRunSQL exposes NextRunAt's statement for the plan test.
var NextRunSQL = nextRunSQL

// AfterChunkRead makes imp, a PostgreSQL import, run f between the reads
// of each chunk holding a job with a unique key or dependencies and that
// chunk's decisions.
func AfterChunkRead(imp queue.Import, f func()) { imp.(*bulkImport).chunkRead = f }

// TCPUserTimeout reads a URL's tcp_user_timeout as Open does.
var TCPUserTimeout = tcpUserTimeout
