package postgres

import (
	"context"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// Worker state changes — claims, outcomes and lease renewals — commit
// without waiting for their WAL record to reach disk (synchronous_commit
// off for that transaction only). The server still writes them in order,
// within about three wal_writer_delay (600 ms by default), and any later
// durable commit (an enqueue, say) flushes them first. What a server crash
// can take back is only the last moments of worker progress, which the
// lifecycle already copes with: a lost claim leaves the job pending (it
// runs again, at least once), a lost outcome leaves it processing under a
// lease that expires (it is rescued and runs again), a lost renewal makes
// a lease expire sooner. Enqueues, imports, template fires and every
// operator's change keep the server's setting: an acknowledged job is
// never lost. docs/postgres.md ("Durability") says the same to users.

// asyncCommit, queued first in a pipelined batch (one implicit
// transaction, up to the batch's Sync), makes that transaction commit
// without waiting for the WAL flush.
const asyncCommit = `SELECT set_config('synchronous_commit', 'off', true)`

// asyncTx begins an explicit transaction that commits the same way.
var asyncTx = pgx.TxOptions{BeginQuery: "BEGIN; SET LOCAL synchronous_commit TO off"}

// conn is what the statements of a transaction run on: a pgx.Tx, or a pool
// connection inside a transaction begun by hand (pipelinedTx).
type conn interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
	SendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults
}

// pipelinedTx runs a worker transaction (asynchronous commit, above) in two
// round trips where pgx.BeginFunc takes at least three: fn sends its first
// batch made with beginBatch (BEGIN and the commit mode go in front of its
// statements; opened reads their results), and returns the statements to
// send with COMMIT behind them (nil for none). On an error it rolls back;
// a connection it cannot roll back is not returned to the pool in a
// transaction (pgxpool closes it).
func (s *Store) pipelinedTx(ctx context.Context, fn func(c conn) (*pgx.Batch, error)) error {
	c, err := s.pool.Acquire(ctx)
	if err != nil {
		return err
	}
	defer c.Release()
	last, err := fn(c)
	if err == nil {
		if last == nil {
			last = &pgx.Batch{}
		}
		last.Queue("COMMIT")
		err = c.SendBatch(ctx, last).Close()
	}
	if err != nil && c.Conn().PgConn().TxStatus() != 'I' {
		c.Exec(context.WithoutCancel(ctx), "ROLLBACK")
	}
	return err
}

// beginBatch is a batch that opens pipelinedTx's transaction.
func beginBatch() *pgx.Batch {
	b := &pgx.Batch{}
	b.Queue("BEGIN")
	b.Queue(asyncCommit)
	return b
}

// opened reads the results of beginBatch's statements.
func opened(br pgx.BatchResults) error {
	for range 2 {
		if _, err := br.Exec(); err != nil {
			return err
		}
	}
	return nil
}
