// Package postgres is queuectl's Store on PostgreSQL, for queues shared by
// workers on many hosts. It owns the PostgreSQL schema (embedded, versioned
// migrations), the mapping of queue.Store onto SQL, and the LISTEN/NOTIFY
// wake-ups.
//
// Design:
//   - One pgxpool per Store. No method holds on to a connection between
//     calls, so after a server restart the pool replaces dead connections
//     and the next call (the engine retries) succeeds. The one exception is
//     a bulk import (bulk.go): one transaction across its chunks. Transient errors
//     (connection lost, serialization failure, deadlock) are returned
//     wrapped, never retried here: a retried insert after an ambiguous
//     commit could report a duplicate for a job that was stored.
//   - Claiming is one statement: a CTE selects runnable jobs in claim order
//     with FOR UPDATE SKIP LOCKED and the UPDATE in the same statement moves
//     them to processing, so concurrent claimers on any host never get the
//     same job and never wait for each other's rows. Partial indexes match
//     the claim's filter and order.
//   - Enqueues and operators' changes commit with the server's
//     synchronous_commit setting (durable by default). Worker state
//     changes (claims, outcomes, lease renewals) commit without waiting
//     for the WAL flush: a server crash can take them back, and the job
//     then runs again (worktx.go).
//   - Wake-ups: transactions that make work runnable send
//     pg_notify on a channel named after the schema, and one dedicated
//     connection per process (not from the pool) LISTENs on it, reconnecting
//     with backoff. A notification is only a hint: it can be lost while the
//     listener reconnects (one wake-up is delivered after each reconnect)
//     and the engine also polls.
//   - Migrations are embedded and versioned in a schema_version table. They
//     run on Open inside one transaction holding a transaction-level
//     advisory lock, so concurrent openers on many hosts agree; a schema
//     newer than this binary is refused with queue.ErrSchemaNewer.
//   - Tables live in the connection's current schema: set search_path in
//     the URL (?search_path=name) to keep several queues in one database.
//
// Execution is at-least-once, as with every queue.Store: a job whose worker
// loses its lease (crash, network partition, expired lease) runs again.
package postgres

import (
	"errors"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/queuectl/queuectl/queue"
)

var (
	_ queue.Store         = (*Store)(nil)
	_ queue.DatabaseClock = (*Store)(nil)
)

// defaultAppName is the application_name of pool connections unless the URL
// sets one; the listener connection appends listenSuffix, the connection
// that vacuums (tidy.go) tidySuffix.
const (
	defaultAppName = "queuectl"
	listenSuffix   = "-listen"
	tidySuffix     = "-tidy"
)

// Store is a queue.Store on one PostgreSQL schema.
type Store struct {
	pool    *pgxpool.Pool
	channel string // NOTIFY channel for this schema
	wake    *waker
	// eventsChannel announces job events (attempts ended, output appended).
	eventsChannel string
	events        *waker
	limited       limitedCache
	// tidyCfg connects the connection a round of Tidy vacuums on.
	tidyCfg *pgx.ConnConfig
	// userTimeout is the connections' TCP user timeout (0: the system's),
	// which an import's connection is without for its length (patient).
	userTimeout time.Duration

	closeOnce sync.Once
}

// notifySQL queues a wake-up, delivered when the transaction commits.
const notifySQL = `SELECT pg_notify($1, '')`

func isUnique(err error) bool { return pgCode(err) == "23505" }

// transient marks a deadlock or a serialization failure as
// queue.ErrRolledBack (and so queue.ErrUnavailable): the server rolled the
// transaction back, so nothing of it was kept, and the same call may
// succeed if made again (an import that took unique keys in another order
// than a concurrent one, say).
func transient(err error) error {
	switch pgCode(err) {
	case "40P01", "40001":
		return rolledBack{err}
	}
	return err
}

type rolledBack struct{ error }

func (r rolledBack) Is(target error) bool {
	return target == queue.ErrUnavailable || target == queue.ErrRolledBack
}
func (r rolledBack) Unwrap() error { return r.error }

func pgCode(err error) string {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return pe.Code
	}
	return ""
}

// unstorable tells a text no text column can hold: one with a NUL, or
// bytes that are not UTF-8. The server refuses such a parameter, so a
// lookup by one (an id or a filter from a request) answers what a lookup
// that matches nothing answers, as on SQLite, without asking the server.
func unstorable(s string) bool { return strings.IndexByte(s, 0) >= 0 || !utf8.ValidString(s) }

// Value helpers. Absent values (zero times, empty strings) are stored as NULL.

func nullTime(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return t
}

func utc(t *time.Time) time.Time {
	if t == nil {
		return time.Time{}
	}
	return t.UTC()
}

func nullString(s string) any {
	if s == "" {
		return nil
	}
	return s
}

func str(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}

func stateStrings(states []queue.State) []string {
	out := make([]string, len(states))
	for i, s := range states {
		out[i] = string(s)
	}
	return out
}

// collect scans every row with fn; like pgx.CollectRows, but nil when there
// are no rows, as the SQLite store returns.
func collect[T any](rows pgx.Rows, fn pgx.RowToFunc[T]) ([]T, error) {
	return pgx.AppendRows([]T(nil), rows, fn)
}
