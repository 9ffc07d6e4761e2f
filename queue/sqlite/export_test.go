package sqlite

import "database/sql"

// OpenRaw opens the file without migrations, for tests that tamper with it.
func OpenRaw(path string) (*sql.DB, error) { return sql.Open("sqlite3", dsn(path, false)) }
