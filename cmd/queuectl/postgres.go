package main

import (
	"context"

	"github.com/queuectl/queuectl/queue"
	"github.com/queuectl/queuectl/queue/postgres"
)

func openPostgres(ctx context.Context, dsn string) (queue.Store, error) {
	return postgres.Open(ctx, dsn)
}
