package queue

import (
	"context"
	"testing"
)

// A pass goes on past a batch short of the batch size (rows found and
// changed meanwhile are left out of theirs) and ends at one that changed
// nothing.
func TestPrunerBatchesGoOnPastAShortBatch(t *testing.T) {
	p := NewPruner(nil, PrunerConfig{Batch: 500})
	sizes := []int{500, 499, 500, 3, 0, 500}
	calls := 0
	total, err := p.batches(context.Background(), func() (int, error) {
		calls++
		return sizes[calls-1], nil
	})
	if err != nil || total != 1502 || calls != 5 {
		t.Fatalf("batches: total %d after %d calls, %v; want 1502 after 5", total, calls, err)
	}
}
