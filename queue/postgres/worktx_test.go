package postgres_test

import (
	"testing"
	"time"

	"github.com/queuectl/queuectl/queue"
)

// Worker transactions commit without waiting for the WAL flush, but only
// they: the setting must not stay on the pooled connection, where the next
// enqueue would inherit it.
func TestWorkerCommitModeStaysInItsTransaction(t *testing.T) {
	_, u := newSchema(t)
	s := open(t, withParams(t, u, "pool_max_conns", "1"))
	ctx := tctx(t)
	now := time.Now().UTC()
	mk := func(id string, after ...string) *queue.Job {
		j, err := queue.NewJob{ID: id, Command: "true", After: after}.Resolve(queue.DefaultSettings(), now)
		if err != nil {
			t.Fatal(err)
		}
		return j
	}
	if err := s.InsertJobs(ctx, []*queue.Job{mk("a")}); err != nil {
		t.Fatal(err)
	}
	if err := s.InsertJobs(ctx, []*queue.Job{mk("b", "a")}); err != nil {
		t.Fatal(err)
	}
	if err := s.RegisterWorker(ctx, &queue.WorkerInfo{ID: "w", Host: "h", StartedAt: now}); err != nil {
		t.Fatal(err)
	}
	check := func(after string) {
		t.Helper()
		got, err := s.Setting(ctx, "synchronous_commit")
		if err != nil || got != "on" {
			t.Fatalf("after %s: synchronous_commit = %q (%v), want on", after, got, err)
		}
	}
	check("open")
	claimed, err := s.ClaimJobs(ctx, queue.ClaimParams{Worker: "w", Limit: 2, Now: now.Add(time.Second), LeaseUntil: now.Add(time.Hour)})
	if err != nil || len(claimed) != 1 {
		t.Fatalf("claim: %d jobs, %v", len(claimed), err)
	}
	check("a claim")
	if _, err := s.Heartbeat(ctx, queue.HeartbeatParams{Worker: "w", Jobs: []string{"a"}, Now: now, LeaseUntil: now.Add(time.Hour)}); err != nil {
		t.Fatal(err)
	}
	check("a heartbeat")
	code := 0
	end := queue.End{Outcome: queue.OutcomeSucceeded, ExitCode: &code, Started: now, Finished: now}
	applied, err := s.FinishJobs(ctx, []queue.Finish{queue.RetryPolicy{}.Decide(claimed[0], "w", end, now)})
	if err != nil || !applied[0] {
		t.Fatalf("finish: %v %v", applied, err)
	}
	check("a finish that released a dependent")
	if b, err := s.GetJob(ctx, "b"); err != nil || b.State != queue.StatePending {
		t.Fatalf("dependent after its dependency completed: %+v %v", b, err)
	}
}

// TestWorkerTransactionsCommitAsynchronously records, from a trigger inside
// each transaction that writes a job row, the commit mode the transaction
// runs under: claims, renewals and outcomes commit asynchronously, while an
// enqueue keeps the server's durable setting.
func TestWorkerTransactionsCommitAsynchronously(t *testing.T) {
	schema, u := newSchema(t)
	s := open(t, u)
	ctx := tctx(t)
	admin(t, `CREATE TABLE `+schema+`.commit_modes (seq bigserial, op text, mode text);
		CREATE FUNCTION `+schema+`.note_commit_mode() RETURNS trigger LANGUAGE plpgsql AS $$
		BEGIN
			INSERT INTO `+schema+`.commit_modes (op, mode) VALUES (TG_OP, current_setting('synchronous_commit'));
			RETURN NULL;
		END $$;
		CREATE TRIGGER note_commit_mode AFTER INSERT OR UPDATE ON `+schema+`.jobs
			FOR EACH STATEMENT EXECUTE FUNCTION `+schema+`.note_commit_mode()`)
	conn := connect(t, u)
	modes := func(step string, want string) {
		t.Helper()
		var got []string
		rows, err := conn.Query(ctx, `DELETE FROM commit_modes RETURNING mode`)
		if err != nil {
			t.Fatal(err)
		}
		for rows.Next() {
			var m string
			if err := rows.Scan(&m); err != nil {
				t.Fatal(err)
			}
			got = append(got, m)
		}
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
		if len(got) == 0 {
			t.Fatalf("%s wrote no job row", step)
		}
		for _, m := range got {
			if m != want {
				t.Fatalf("%s ran with synchronous_commit %v, want %s", step, got, want)
			}
		}
	}
	now := time.Now().UTC()
	j, err := queue.NewJob{ID: "a", Command: "true"}.Resolve(queue.DefaultSettings(), now)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.InsertJobs(ctx, []*queue.Job{j}); err != nil {
		t.Fatal(err)
	}
	modes("an enqueue", "on")
	if err := s.RegisterWorker(ctx, &queue.WorkerInfo{ID: "w", Host: "h", StartedAt: now}); err != nil {
		t.Fatal(err)
	}
	claimed, err := s.ClaimJobs(ctx, queue.ClaimParams{Worker: "w", Limit: 1, Now: now.Add(time.Second), LeaseUntil: now.Add(time.Hour)})
	if err != nil || len(claimed) != 1 {
		t.Fatalf("claim: %d jobs, %v", len(claimed), err)
	}
	modes("a claim", "off")
	if _, err := s.Heartbeat(ctx, queue.HeartbeatParams{Worker: "w", Jobs: []string{"a"}, Now: now, LeaseUntil: now.Add(2 * time.Hour)}); err != nil {
		t.Fatal(err)
	}
	modes("a lease renewal", "off")
	code := 0
	end := queue.End{Outcome: queue.OutcomeSucceeded, ExitCode: &code, Started: now, Finished: now}
	if applied, err := s.FinishJobs(ctx, []queue.Finish{queue.RetryPolicy{}.Decide(claimed[0], "w", end, now)}); err != nil || !applied[0] {
		t.Fatalf("finish: %v %v", applied, err)
	}
	modes("an outcome", "off")
}
