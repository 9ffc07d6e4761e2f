package sqlite

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
)

// TestClaimUsesIndexInOrder checks that the claim never sorts the runnable
// jobs: it must walk a claim index in claim order.
func TestClaimUsesIndexInOrder(t *testing.T) {
	s, err := Open(context.Background(), filepath.Join(t.TempDir(), "q.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for _, queues := range [][]string{nil, {"a"}, {"a", "b"}} {
		index, filter := claimIndex(queues)
		q := `EXPLAIN QUERY PLAN SELECT rowid FROM jobs INDEXED BY ` + index + `
			WHERE state IN ('pending', 'failed') AND run_at <= 5` + filter + ` ORDER BY priority DESC, run_at, created_at LIMIT 3`
		args := []any{}
		for _, x := range queues {
			args = append(args, x)
		}
		rows, err := s.readDB.Query(q, args...)
		if err != nil {
			t.Fatal(err)
		}
		var plan []string
		for rows.Next() {
			var a, b, c int
			var d string
			rows.Scan(&a, &b, &c, &d)
			plan = append(plan, d)
		}
		rows.Close()
		p := strings.Join(plan, "; ")
		if !strings.Contains(p, "jobs_claim") || strings.Contains(p, "TEMP B-TREE") {
			t.Errorf("queues %v: plan %q", queues, p)
		}
	}
}
