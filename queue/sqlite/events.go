package sqlite

import "context"

// JobEvents implements queue.Store: writers touch a second file beside
// the database, "<db>-events", so that followers and waiters are not woken
// by new work and idle workers not by output.
func (s *Store) JobEvents(ctx context.Context) (<-chan struct{}, error) {
	return s.events.subscribe(ctx)
}
