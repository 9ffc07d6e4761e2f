package postgres

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/queuectl/queuectl/queue"
	"github.com/queuectl/queuectl/queue/internal/storekit"
)

// Bulk imports (enqueue --file) on PostgreSQL are one transaction fed a
// chunk at a time: PostgreSQL locks rows, not the database, so an open
// import holds back no claim, heartbeat or other enqueue, and its jobs stay
// invisible to every other session until Commit. A process that dies
// mid-import drops its connection and the server rolls the transaction
// back: all or nothing, with no recovery step. The transaction keeps one
// pool connection for the length of the import (the one exception to "no
// method holds a connection between calls"); memory on both sides is one
// chunk.

type bulkImport struct {
	s    *Store
	tx   pgx.Tx
	done bool
}

var _ queue.Import = (*bulkImport)(nil)

// BeginImport implements queue.Store.
func (s *Store) BeginImport(ctx context.Context) (queue.Import, error) {
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return nil, fmt.Errorf("begin import: %w", err)
	}
	return &bulkImport{s: s, tx: tx}, nil
}

// Stage implements queue.Import.
func (b *bulkImport) Stage(ctx context.Context, jobs []*queue.Job) error {
	if b.done {
		return errors.New("stage jobs: the import has ended")
	}
	for _, j := range jobs {
		if !storekit.Plain(j) {
			return fmt.Errorf("stage jobs: %w: job %q: a bulk import (enqueue --file) takes no after or unique_key; enqueue it alone", queue.ErrInvalid, j.ID)
		}
	}
	if err := sendInserts(ctx, b.tx, jobs, ""); err != nil {
		return fmt.Errorf("stage jobs: %w", err)
	}
	return nil
}

// Commit implements queue.Import.
func (b *bulkImport) Commit(ctx context.Context) error {
	if b.done {
		return errors.New("commit import: the import has ended")
	}
	b.done = true
	if _, err := b.tx.Exec(ctx, notifySQL, b.s.channel); err != nil {
		b.tx.Rollback(context.WithoutCancel(ctx))
		return fmt.Errorf("commit import: %w", err)
	}
	if err := b.tx.Commit(ctx); err != nil {
		return fmt.Errorf("commit import: %w", err)
	}
	b.s.wake.broadcast()
	return nil
}

// Abort implements queue.Import.
func (b *bulkImport) Abort(ctx context.Context) error {
	if b.done {
		return nil
	}
	b.done = true
	if err := b.tx.Rollback(ctx); err != nil {
		return fmt.Errorf("abort import: %w", err)
	}
	return nil
}
