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
// Only when the server's autovacuum is off, and only tables this role may
// vacuum (those of a role it belongs to; PostgreSQL skips the others with a
// warning).
const tidyWhat = `SELECT s.schemaname::text, s.relname::text,
		s.n_dead_tup > 50 + 0.02 * s.n_live_tup, s.n_mod_since_analyze > 50 + 0.05 * s.n_live_tup
	FROM pg_stat_user_tables s JOIN pg_class c ON c.oid = s.relid
	WHERE s.schemaname = current_schema() AND NOT current_setting('autovacuum')::boolean
		AND pg_has_role(c.relowner, 'USAGE')
		AND (s.n_dead_tup > 50 + 0.02 * s.n_live_tup OR s.n_mod_since_analyze > 50 + 0.05 * s.n_live_tup)
	ORDER BY s.relname`

// tidyLock is held (on its session) by the one process tidying a schema.
const tidyLock = `hashtextextended('queuectl-tidy:' || current_schema(), 0)`

// tidyNeed is a table past a threshold.
type tidyNeed struct {
	schema, table   string
	vacuum, analyze bool
}

// Tidy implements queue.Tidier: when the server's autovacuum is off, it
// vacuums and analyzes the tables of the store's schema that autovacuum
// would, one process at a time (the others skip the round). It returns
// what it did.
//
// A vacuum of a large table takes a while, so a round that has work runs
// on a connection of its own, outside the pool, where it keeps no claim,
// outcome or lease renewal waiting; the tidy lock is that session's and
// goes with it.
func (s *Store) Tidy(ctx context.Context) ([]string, error) {
	needs, err := readTidyNeeds(ctx, s.pool)
	if err != nil || len(needs) == 0 {
		return nil, wrapTidy(err)
	}
	conn, err := pgx.ConnectConfig(ctx, s.tidyCfg)
	if err != nil {
		return nil, wrapTidy(err)
	}
	defer func() {
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		conn.Close(cctx)
	}()
	var locked bool
	if err := conn.QueryRow(ctx, `SELECT pg_try_advisory_lock(`+tidyLock+`)`).Scan(&locked); err != nil || !locked {
		return nil, wrapTidy(err) // not locked: another process is at it
	}
	// Read again under the lock: another process may have just done it.
	if needs, err = readTidyNeeds(ctx, conn); err != nil {
		return nil, wrapTidy(err)
	}
	var done []string
	for _, n := range needs {
		// VACUUM runs outside a transaction and lets claims, finishes and
		// enqueues go on (see docs/postgres.md for the locks it takes).
		cmd, what := "VACUUM (ANALYZE)", "vacuum and analyze"
		switch {
		case !n.analyze:
			cmd, what = "VACUUM", "vacuum"
		case !n.vacuum:
			cmd, what = "ANALYZE", "analyze"
		}
		if _, err := conn.Exec(ctx, cmd+" "+pgx.Identifier{n.schema, n.table}.Sanitize()); err != nil {
			return done, fmt.Errorf("tidy tables: %s %s: %w", what, n.table, err)
		}
		done = append(done, what+" "+n.table)
	}
	return done, nil
}

// readTidyNeeds lists the tables past a threshold.
func readTidyNeeds(ctx context.Context, q conn) ([]tidyNeed, error) {
	rows, err := q.Query(ctx, tidyWhat)
	if err != nil {
		return nil, err
	}
	var needs []tidyNeed
	var n tidyNeed
	_, err = pgx.ForEachRow(rows, []any{&n.schema, &n.table, &n.vacuum, &n.analyze}, func() error {
		needs = append(needs, n)
		return nil
	})
	return needs, err
}

// wrapTidy names the operation of a non-nil err.
func wrapTidy(err error) error {
	if err != nil {
		return fmt.Errorf("tidy tables: %w", err)
	}
	return nil
}
