package sqlite

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/queuectl/queuectl/queue"
)

// RevokeSession implements queue.Store. Like every write it holds the
// write lock until it commits, so numbers grow in commit order.
func (s *Store) RevokeSession(ctx context.Context, p queue.RevokeSessionParams) error {
	err := s.write(ctx, true, func(ctx context.Context, tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, `DELETE FROM session_revocations WHERE expires_at < ?`, toUS(p.PruneBefore)); err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx, `INSERT INTO session_revocations (nonce, expires_at) VALUES (?, ?)
			ON CONFLICT (nonce) DO NOTHING`, p.Nonce, toUS(p.Expires))
		return err
	})
	if err != nil {
		return fmt.Errorf("revoke session: %w", describe(err))
	}
	return nil
}

// RevokedSessions implements queue.Store.
func (s *Store) RevokedSessions(ctx context.Context, p queue.RevokedSessionsParams) ([]queue.SessionRevocation, error) {
	rows, err := s.readDB.QueryContext(ctx, `SELECT seq, nonce, expires_at FROM session_revocations
		WHERE seq > ? AND expires_at >= ? ORDER BY seq`, p.After, toUS(p.Now))
	if err != nil {
		return nil, fmt.Errorf("revoked sessions: %w", describe(err))
	}
	defer rows.Close()
	var out []queue.SessionRevocation
	for rows.Next() {
		var r queue.SessionRevocation
		var expires int64
		if err := rows.Scan(&r.Seq, &r.Nonce, &expires); err != nil {
			return nil, fmt.Errorf("revoked sessions: %w", err)
		}
		r.Expires = fromUS(expires)
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("revoked sessions: %w", err)
	}
	return out, nil
}
