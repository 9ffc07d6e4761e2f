package postgres

import (
	"context"
	"fmt"
)

// JobEvents implements queue.Store: a second NOTIFY channel, so that
// followers and waiters are not woken by new work and idle workers not by
// output. The first call opens its listening connection.
func (s *Store) JobEvents(ctx context.Context) (<-chan struct{}, error) {
	c, err := s.events.subscribe(ctx)
	if err != nil {
		return nil, fmt.Errorf("job events: %w", err)
	}
	return c, nil
}
