package sqlite

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
)

// TestClaimUsesIndexInOrder checks that the claim never sorts the runnable
// jobs: it must walk a claim index in claim order (and read the controls
// once, not per job).
func TestClaimUsesIndexInOrder(t *testing.T) {
	s, err := Open(context.Background(), filepath.Join(t.TempDir(), "q.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for _, queues := range [][]string{nil, {"a"}, {"a", "b"}} {
		q := `EXPLAIN QUERY PLAN ` + freeQuery(queues)
		args := []any{5}
		for range 2 {
			for _, x := range queues {
				args = append(args, x)
			}
		}
		args = append(args, 3)
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
		if !strings.Contains(p, "jobs_claim") || strings.Contains(p, "TEMP B-TREE") || strings.Contains(p, "CORRELATED SCALAR SUBQUERY 2") {
			t.Errorf("queues %v: plan %q", queues, p)
		}
	}
}
