package main

import (
	"context"
	"errors"

	"github.com/queuectl/queuectl/queue"
)

func openPostgres(ctx context.Context, dsn string) (queue.Store, error) {
	return nil, errors.New("PostgreSQL support is not built into this binary")
}
