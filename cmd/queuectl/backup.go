package main

import (
	"context"
	"errors"
	"fmt"
	"os/signal"
	"syscall"

	"github.com/queuectl/queuectl/queue"
	"github.com/queuectl/queuectl/queue/sqlite"
	"github.com/spf13/cobra"
)

// backuper is a store that can copy itself while in use (SQLite).
type backuper interface {
	Backup(ctx context.Context, path string) error
}

var errBackupPostgres = usageError{errors.New("backup: only SQLite databases are copied by queuectl; back up PostgreSQL with pg_dump")}

func (a *app) backupCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "backup FILE",
		Short: "Copy the SQLite database to FILE while workers keep running",
		Long: `Write a consistent copy of the SQLite database to FILE (which must not
exist), online: workers and services keep running. The copy is one snapshot
(SQLite's VACUUM INTO), compacted, synced to disk and then renamed into place.

To restore: stop the service and workers, replace the database file with the
copy (removing its -wal and -shm files), and start them again. PostgreSQL
databases are backed up with the server's tools (pg_dump).`,
		Args: exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if args[0] == "" {
				return usagef("backup: FILE is empty: name the file to write the copy to")
			}
			// Refused before the store opens: opening a PostgreSQL
			// database would connect and apply its migrations.
			dsn, err := a.dsn()
			if err != nil {
				return err
			}
			if isPostgresURL(dsn) {
				return errBackupPostgres
			}
			// A stop signal (Ctrl-C, a job's timeout, systemd) interrupts
			// the copy, and the partial file is removed.
			ctx, stop := signal.NotifyContext(cmd.Context(), syscall.SIGINT, syscall.SIGTERM)
			defer stop()
			cmd.SetContext(ctx)
			// As it is: a backup taken before an upgrade, with the new
			// binary, holds the schema the old one runs.
			return a.withStoreOpts(cmd, sqlite.Options{MustExist: true, AsIs: true}, func(ctx context.Context, st queue.Store) error {
				b, ok := st.(backuper)
				if !ok {
					return errBackupPostgres
				}
				if err := b.Backup(ctx, args[0]); err != nil {
					if ctx.Err() != nil {
						return fmt.Errorf("backup: stopped by a signal; %s not written", args[0])
					}
					return err
				}
				_, err := fmt.Fprintf(a.stdout, "backed up to %s\n", args[0])
				return err
			})
		},
	}
}
