package postgres_test

import (
	"fmt"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/queuectl/queuectl/queue/postgres"
)

// The id a COPY found taken is read from the server's detail in English
// and in the server's other languages (lc_messages), an id with
// parentheses included; another constraint's violation names no id.
func TestTakenIDFromTheServersDetail(t *testing.T) {
	for _, c := range []struct {
		constraint, detail, id string
		ok                     bool
	}{
		{"jobs_pkey", "Key (id)=(e3) already exists.", "e3", true},
		{"jobs_pkey", "Schlüssel »(id)=(e3)« existiert bereits.", "e3", true},
		{"jobs_pkey", "Key (id)=(a (b) c) already exists.", "a (b) c", true},
		{"jobs_fire_key", "Key (fire_key)=(k) already exists.", "", false},
		{"jobs_pkey", "something else", "", false},
	} {
		err := fmt.Errorf("copy: %w", &pgconn.PgError{Code: "23505", ConstraintName: c.constraint, Detail: c.detail})
		if id, ok := postgres.TakenID(err); id != c.id || ok != c.ok {
			t.Errorf("%s %q: %q %v, want %q %v", c.constraint, c.detail, id, ok, c.id, c.ok)
		}
	}
}
