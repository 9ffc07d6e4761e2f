package main

import (
	"context"
	"net/url"
	"os"
	"slices"
	"strings"

	"github.com/queuectl/queuectl/queue"
	"github.com/queuectl/queuectl/queue/postgres"
)

func openPostgres(ctx context.Context, dsn string) (queue.Store, error) {
	return postgres.Open(ctx, dsn)
}

// childEnv is the environment of a worker process that a command starts:
// this one's, with QUEUECTL_DB naming the database. The environment, unlike
// the arguments, is readable only by the same user.
func childEnv(dsn string) []string {
	env := slices.DeleteFunc(os.Environ(), func(kv string) bool { return strings.HasPrefix(kv, "QUEUECTL_DB=") })
	return append(env, "QUEUECTL_DB="+dsn)
}

// jobDBEnv is the QUEUECTL_DB a job sees: the worker's database without a
// password, so a job (or whoever reads its environment) cannot take it. A
// job that runs queuectl itself supplies the password the standard way
// (PGPASSFILE or PGPASSWORD).
func jobDBEnv(dsn string) []string {
	return []string{"QUEUECTL_DB=" + stripPassword(dsn)}
}

// stripPassword removes the password from a postgres:// URL, from its user
// information and from a password parameter.
func stripPassword(dsn string) string {
	if !isPostgresURL(dsn) {
		return dsn
	}
	u, err := url.Parse(dsn)
	if err != nil {
		return "" // an unparsable URL may hold a password anywhere
	}
	if u.User != nil {
		if _, has := u.User.Password(); has {
			u.User = url.User(u.User.Username())
		}
	}
	if q := u.Query(); q.Has("password") {
		q.Del("password")
		u.RawQuery = q.Encode()
	}
	return u.String()
}
