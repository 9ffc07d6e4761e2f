package bench

import (
	"os"
	"path/filepath"
	"testing"
)

// The write lock's figures come from a worker's last "process stats" line.
func TestLastProcessStats(t *testing.T) {
	path := filepath.Join(t.TempDir(), "worker-1.log")
	log := `{"level":"info","message":"process stats","write_lock_ms":1,"write_lock_cpu_ms":1,"write_transactions":1}
not json
{"level":"info","message":"job completed","write_lock_ms":99}
{"level":"info","message":"process stats","write_lock_ms":30,"write_lock_cpu_ms":12,"write_transactions":8}
`
	if err := os.WriteFile(path, []byte(log), 0o600); err != nil {
		t.Fatal(err)
	}
	st, found := lastProcessStats(path)
	if !found || st.Held == nil || *st.Held != 30 || st.HeldCPU != 12 || st.Transactions != 8 {
		t.Fatalf("last process stats: found %v, %+v", found, st)
	}

	pg := filepath.Join(t.TempDir(), "worker-2.log")
	if err := os.WriteFile(pg, []byte(`{"message":"process stats","cpu_user_ms":3}`+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if st, found := lastProcessStats(pg); !found || st.Held != nil {
		t.Fatalf("a store without write stats: found %v, held %v", found, st.Held)
	}

	// A new worker with an earlier one's PID appends to its log: until it
	// logs its own stats, the earlier worker's are not its.
	reused := filepath.Join(t.TempDir(), "worker-3.log")
	old := `{"message":"worker starting"}` + "\n" + `{"message":"process stats","write_lock_ms":7}` + "\n"
	if err := os.WriteFile(reused, []byte(old+`{"message":"worker starting"}`+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if st, found := lastProcessStats(reused); found {
		t.Fatalf("an earlier worker's stats read as the new one's: %+v", st)
	}
	f, err := os.OpenFile(reused, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(`{"message":"process stats","write_lock_ms":2}` + "\n")
	f.Close()
	if st, found := lastProcessStats(reused); !found || st.Held == nil || *st.Held != 2 {
		t.Fatalf("the new worker's own stats: found %v, %+v", found, st)
	}
}

// A projection on n cores is the least of what n cores and the write
// lock allow; without the holder's CPU there is none.
func TestOnCores(t *testing.T) {
	r := shellRun{user: 0.3, sys: 0.2, childUser: 0.4, childSys: 0.1, lockCPU: 0.25} // 1 ms of CPU a job
	for _, tc := range []struct {
		n    int
		want float64
	}{{1, 1000}, {2, 2000}, {4, 4000}, {8, 4000}} {
		if got := r.onCores(tc.n); got != tc.want {
			t.Errorf("on %d cores: %v jobs/s, want %v", tc.n, got, tc.want)
		}
	}
	r.lockCPU = 0
	if got := r.onCores(8); got != 0 {
		t.Errorf("lock not timed: %v jobs/s, want 0", got)
	}
}
