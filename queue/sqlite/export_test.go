package sqlite

import (
	"database/sql"
	"fmt"
)

// OpenRaw opens the file without migrations, for tests that tamper with it.
func OpenRaw(path string) (*sql.DB, error) { return sql.Open("sqlite3", dsn(path, false)) }

// MigrateTo creates a database at path with the first n migrations only.
func MigrateTo(path string, n int) error {
	db, err := OpenRaw(path)
	if err != nil {
		return err
	}
	defer db.Close()
	names, err := migrationFS.ReadDir("migrations")
	if err != nil {
		return err
	}
	for _, m := range names[:n] {
		body, err := migrationFS.ReadFile("migrations/" + m.Name())
		if err != nil {
			return err
		}
		if _, err := db.Exec(string(body)); err != nil {
			return fmt.Errorf("%s: %w", m.Name(), err)
		}
	}
	_, err = db.Exec(fmt.Sprintf("PRAGMA user_version = %d", n))
	return err
}

// SchemaVersion reads a database's schema version as Open does.
var SchemaVersion = schemaVersion

// WriterPragma reads an integer PRAGMA on s's writer connection.
func WriterPragma(s *Store, name string) (v int64, err error) {
	err = s.writeDB.QueryRow("PRAGMA " + name).Scan(&v)
	return v, err
}

// Connections counts the store's open connections, the writer's and the
// readers'.
func Connections(s *Store) int {
	n := s.writeDB.Stats().OpenConnections
	if s.readDB != s.writeDB {
		n += s.readDB.Stats().OpenConnections
	}
	return n
}
