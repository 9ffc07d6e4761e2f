package postgres

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// PostgreSQL reclaims the space of dead row versions only when something
// vacuums the table, and plans its queries from statistics only ANALYZE
// refreshes. A queue makes dead versions fast: every job leaves two in
// jobs (its claim and its finish each write a new version), and every
// statement one in the counter tables. Normally the server's autovacuum
// does both jobs (migration 12 lowers its thresholds for jobs). A server
// running without it (autovacuum = off) does neither, and then the tables
// and their indexes grow without end, the claim wades through dead index
// entries, and the planner works from statistics of an empty table. Then
// the workers do autovacuum's work on their own schema: Tidy.

// tidyWhat names the tables of the schema that need a vacuum or an analyze,
// by autovacuum's rule with migration 12's thresholds for jobs: more dead
// versions than 50 plus 2 % of the live rows (the default is 20 %), more
// rows changed since the last analyze than 50 plus 5 % (default 10 %).
// Only when the server's autovacuum is off.
const tidyWhat = `SELECT relname::text, n_dead_tup > 50 + 0.02 * n_live_tup, n_mod_since_analyze > 50 + 0.05 * n_live_tup
	FROM pg_stat_user_tables
	WHERE schemaname = current_schema() AND NOT current_setting('autovacuum')::boolean
		AND (n_dead_tup > 50 + 0.02 * n_live_tup OR n_mod_since_analyze > 50 + 0.05 * n_live_tup)
	ORDER BY relname`

// tidyLock is held (on the session) by the one process tidying a schema.
const tidyLock = `hashtextextended('queuectl-tidy:' || current_schema(), 0)`

// Tidy implements queue.Tidier: when the server's autovacuum is off, it
// vacuums and analyzes the tables of the store's schema that autovacuum
// would, one process at a time (the others skip the round). It returns
// what it did.
func (s *Store) Tidy(ctx context.Context) ([]string, error) {
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return nil, fmt.Errorf("tidy tables: %w", err)
	}
	defer conn.Release()
	rows, err := conn.Query(ctx, tidyWhat)
	if err != nil {
		return nil, fmt.Errorf("tidy tables: %w", err)
	}
	type need struct {
		table           string
		vacuum, analyze bool
	}
	var needs []need
	var n need
	if _, err := pgx.ForEachRow(rows, []any{&n.table, &n.vacuum, &n.analyze}, func() error {
		needs = append(needs, n)
		return nil
	}); err != nil {
		return nil, fmt.Errorf("tidy tables: %w", err)
	}
	if len(needs) == 0 {
		return nil, nil
	}
	var locked bool
	if err := conn.QueryRow(ctx, `SELECT pg_try_advisory_lock(`+tidyLock+`)`).Scan(&locked); err != nil {
		return nil, fmt.Errorf("tidy tables: %w", err)
	}
	if !locked {
		return nil, nil // another process is at it
	}
	defer func() {
		// The lock is the session's: a connection that cannot give it back
		// (the round was cancelled mid-statement, say) is closed instead of
		// going back to the pool with it.
		uctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		if _, err := conn.Exec(uctx, `SELECT pg_advisory_unlock(`+tidyLock+`)`); err != nil {
			conn.Conn().Close(uctx)
		}
	}()
	var done []string
	for _, n := range needs {
		// VACUUM runs outside a transaction, and takes no lock that stops
		// claims, finishes or enqueues.
		cmd, what := "VACUUM (ANALYZE)", "vacuum and analyze"
		switch {
		case !n.analyze:
			cmd, what = "VACUUM", "vacuum"
		case !n.vacuum:
			cmd, what = "ANALYZE", "analyze"
		}
		if _, err := conn.Exec(ctx, cmd+" "+pgx.Identifier{n.table}.Sanitize()); err != nil {
			return done, fmt.Errorf("tidy tables: %s %s: %w", what, n.table, err)
		}
		done = append(done, what+" "+n.table)
	}
	return done, nil
}
