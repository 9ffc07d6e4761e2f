package postgres

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"hash/fnv"
	"os"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/queuectl/queuectl/queue"
)

//go:embed migrations/*.sql
var migrationFS embed.FS

// Open connects to the database at url (postgres:// or postgresql://, or a
// key=value connection string), applies pending migrations and returns the
// Store. Pool settings such as pool_max_conns may be given in the URL. A
// schema written by a newer binary is refused with queue.ErrSchemaNewer.
func Open(ctx context.Context, url string) (*Store, error) {
	cfg, userTimeout, err := parseConfig(url)
	if err != nil {
		return nil, fmt.Errorf("open postgres: %w", err)
	}
	name := target(cfg.ConnConfig)
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", name, err)
	}
	schema, _, err := migrate(ctx, pool)
	if err != nil {
		pool.Close()
		return nil, fmt.Errorf("open %s: %w", name, err)
	}
	s := &Store{pool: pool, channel: channelName(schema), eventsChannel: eventsChannelName(schema), userTimeout: userTimeout}
	listenCfg := cfg.ConnConfig.Copy()
	listenCfg.RuntimeParams["application_name"] += listenSuffix
	s.wake = newWaker(listenCfg, s.channel)
	s.tidyCfg = cfg.ConnConfig.Copy()
	s.tidyCfg.RuntimeParams["application_name"] += tidySuffix
	s.events = newWaker(listenCfg, s.eventsChannel)
	return s, nil
}

// Migrate applies pending migrations to the database at url and reports how
// many it applied, for an explicit migration step before workers start.
func Migrate(ctx context.Context, url string) (applied int, err error) {
	cfg, _, err := parseConfig(url)
	if err != nil {
		return 0, fmt.Errorf("migrate postgres: %w", err)
	}
	conn, err := pgx.ConnectConfig(ctx, cfg.ConnConfig)
	if err != nil {
		return 0, fmt.Errorf("migrate %s: %w", target(cfg.ConnConfig), err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	_, applied, err = migrate(ctx, conn)
	if err != nil {
		return 0, fmt.Errorf("migrate %s: %w", target(cfg.ConnConfig), err)
	}
	return applied, nil
}

// defaultConnectTimeout bounds a connection's start when neither the URL
// (connect_timeout) nor PGCONNECT_TIMEOUT says: libpq's default is to wait
// for ever, and a server that accepts the connection and never answers
// would hang every command.
const defaultConnectTimeout = 10 * time.Second

// parseConfig reads url as pgx does, with this package's defaults, and
// returns the connections' TCP user timeout too (tcpUserTimeout).
func parseConfig(url string) (*pgxpool.Config, time.Duration, error) {
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, 0, err
	}
	if cfg.ConnConfig.ConnectTimeout == 0 && !strings.Contains(url, "connect_timeout") && os.Getenv("PGCONNECT_TIMEOUT") == "" {
		cfg.ConnConfig.ConnectTimeout = defaultConnectTimeout
	}
	userTimeout, err := tcpUserTimeout(cfg.ConnConfig.RuntimeParams)
	if err != nil {
		return nil, 0, err
	}
	cfg.ConnConfig.DialFunc = dialFunc(cfg.ConnConfig.ConnectTimeout, userTimeout)
	if cfg.ConnConfig.RuntimeParams["application_name"] == "" {
		cfg.ConnConfig.RuntimeParams["application_name"] = defaultAppName
	}
	return cfg, userTimeout, nil
}

// target names the database for error messages, without the password.
func target(c *pgx.ConnConfig) string {
	return fmt.Sprintf("postgres://%s@%s/%s", c.User, hostPort(c.Host, c.Port), c.Database)
}

func hostPort(host string, port uint16) string {
	if len(host) > 0 && host[0] == '/' { // a Unix socket directory
		return host
	}
	return host + ":" + strconv.Itoa(int(port))
}

// channelName is the NOTIFY channel of one schema, so that queues in
// different schemas of one database do not wake each other. Channel names
// are identifiers (at most 63 bytes); long schema names are hashed.
func channelName(schema string) string { return channelFor("queuectl_wake:", schema) }

// eventsChannelName is the NOTIFY channel of one schema's job events.
func eventsChannelName(schema string) string { return channelFor("queuectl_events:", schema) }

func channelFor(prefix, schema string) string {
	if len(prefix)+len(schema) <= 63 {
		return prefix + schema
	}
	h := fnv.New64a()
	h.Write([]byte(schema))
	return fmt.Sprintf("%s%016x", prefix, h.Sum64())
}

// migrations returns the embedded migration files in version order: file i
// (0-based) brings the schema to version i+1.
func migrations() ([]string, error) {
	entries, err := migrationFS.ReadDir("migrations")
	if err != nil {
		return nil, err
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	sort.Strings(names)
	return names, nil
}

// LatestVersion is the schema version this binary writes.
func LatestVersion() int {
	names, _ := migrations()
	return len(names)
}

type beginner interface {
	Begin(ctx context.Context) (pgx.Tx, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// quickVersion reads the current schema and its version in one round trip
// (simple protocol: nothing to prepare), so that opening an up-to-date
// database, as every short-lived command does, costs one statement. It
// answers only when the current schema has a schema_version table the
// search path resolves to; otherwise ok is false and migrate looks in
// detail.
func quickVersion(ctx context.Context, db beginner) (schema string, version int, ok bool) {
	var v *int
	err := db.QueryRow(ctx, `SELECT current_schema(), (SELECT max(version) FROM schema_version)
		WHERE to_regclass('schema_version') = to_regclass(quote_ident(current_schema()) || '.schema_version')`,
		pgx.QueryExecModeSimpleProtocol).Scan(&schema, &v)
	if err != nil || v == nil {
		return "", 0, false
	}
	return schema, *v, true
}

// migrate applies the pending migrations in one transaction that holds an
// advisory lock keyed on the schema, so concurrent openers wait for the
// first and then find nothing to do. An up-to-date schema is only read: no
// lock, no DDL. It returns the current schema name and the number of
// migrations applied.
func migrate(ctx context.Context, db beginner) (schema string, applied int, err error) {
	names, err := migrations()
	if err != nil {
		return "", 0, err
	}
	latest := len(names)
	if schema, version, ok := quickVersion(ctx, db); ok && version == latest {
		return schema, 0, nil
	}
	err = pgx.BeginFunc(ctx, db, func(tx pgx.Tx) error {
		applied = 0
		var current *string
		if err := tx.QueryRow(ctx, `SELECT current_schema()`).Scan(&current); err != nil {
			return err
		}
		if current == nil {
			var path string
			if err := tx.QueryRow(ctx, `SHOW search_path`).Scan(&path); err != nil {
				return err
			}
			return fmt.Errorf("no schema to use: search_path %q names no existing schema (create it first)", path)
		}
		schema = *current
		version, err := schemaVersion(ctx, tx, schema)
		if err != nil {
			return err
		}
		if version == latest {
			return nil
		}
		if version < latest {
			if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtextextended('queuectl-migrate:' || $1, 0))`, schema); err != nil {
				return err
			}
			if _, err := tx.Exec(ctx, `CREATE TABLE IF NOT EXISTS schema_version (
				version    integer PRIMARY KEY,
				applied_at timestamptz NOT NULL DEFAULT now())`); err != nil {
				return err
			}
			// Another opener may have migrated while this one waited.
			if version, err = schemaVersion(ctx, tx, schema); err != nil {
				return err
			}
		}
		if version > latest {
			return fmt.Errorf("%w (schema %q is at version %d, this binary knows %d): upgrade queuectl",
				queue.ErrSchemaNewer, schema, version, latest)
		}
		for i := version; i < latest; i++ {
			body, err := migrationFS.ReadFile("migrations/" + names[i])
			if err != nil {
				return err
			}
			if _, err := tx.Exec(ctx, string(body)); err != nil {
				return fmt.Errorf("migration %s: %w", names[i], err)
			}
			if _, err := tx.Exec(ctx, `INSERT INTO schema_version (version) VALUES ($1)`, i+1); err != nil {
				return err
			}
			applied++
		}
		return nil
	})
	var unreachable *pgconn.ConnectError
	if errors.As(err, &unreachable) {
		// The first use of the pool: nothing was migrated or tried.
		return "", 0, fmt.Errorf("connect: %w", err)
	}
	if err != nil {
		return "", 0, fmt.Errorf("migrate: %w", err)
	}
	return schema, applied, nil
}

// schemaVersion returns the schema's version, 0 if it has no schema_version
// table yet.
func schemaVersion(ctx context.Context, tx pgx.Tx, schema string) (int, error) {
	var exists bool
	err := tx.QueryRow(ctx, `SELECT to_regclass(quote_ident($1) || '.schema_version') IS NOT NULL`, schema).Scan(&exists)
	if err != nil || !exists {
		return 0, err
	}
	var version int
	err = tx.QueryRow(ctx, `SELECT coalesce(max(version), 0) FROM `+pgx.Identifier{schema, "schema_version"}.Sanitize()).Scan(&version)
	return version, err
}

// Close stops the wake-up and event listeners and closes the pool.
func (s *Store) Close() error {
	s.closeOnce.Do(func() {
		s.wake.close()
		s.events.close()
		s.pool.Close()
	})
	return nil
}
