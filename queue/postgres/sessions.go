package postgres

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/queuectl/queuectl/queue"
)

// RevokeSession implements queue.Store. Sign-outs take turns: the table
// lock (which lets readers read) is taken before the row draws its
// number and held until it commits, so numbers grow in commit order. An
// identity alone would not: a transaction that drew a lower number could
// commit after a reader saw a higher one. Sign-outs are rare, so they
// never wait long.
func (s *Store) RevokeSession(ctx context.Context, p queue.RevokeSessionParams) error {
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `LOCK TABLE session_revocations IN EXCLUSIVE MODE`); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `DELETE FROM session_revocations WHERE expires_at < $1`, p.PruneBefore); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `INSERT INTO session_revocations (nonce, expires_at) VALUES ($1, $2)
			ON CONFLICT (nonce) DO NOTHING`, p.Nonce, p.Expires)
		return err
	})
	if err != nil {
		return fmt.Errorf("revoke session: %w", err)
	}
	return nil
}

// RevokedSessions implements queue.Store.
func (s *Store) RevokedSessions(ctx context.Context, p queue.RevokedSessionsParams) ([]queue.SessionRevocation, error) {
	rows, err := s.pool.Query(ctx, `SELECT seq, nonce, expires_at FROM session_revocations
		WHERE seq > $1 AND expires_at >= $2 ORDER BY seq`, p.After, p.Now)
	if err != nil {
		return nil, fmt.Errorf("revoked sessions: %w", err)
	}
	out, err := collect(rows, func(row pgx.CollectableRow) (queue.SessionRevocation, error) {
		var r queue.SessionRevocation
		err := row.Scan(&r.Seq, &r.Nonce, &r.Expires)
		r.Expires = r.Expires.UTC()
		return r, err
	})
	if err != nil {
		return nil, fmt.Errorf("revoked sessions: %w", err)
	}
	return out, nil
}
