package queue_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/queuectl/queuectl/queue"
)

func TestResolveRejects(t *testing.T) {
	tests := []struct {
		name     string
		job      queue.NewJob
		mentions string
	}{
		{"missing command", queue.NewJob{}, "command is required"},
		{"blank command", queue.NewJob{Command: " \t\n"}, "command is required"},
		{"NUL in command", queue.NewJob{Command: "echo a\x00b"}, "NUL"},
		{"id with spaces", queue.NewJob{ID: "my job", Command: "true"}, "white space"},
		{"id with a control character", queue.NewJob{ID: "a\x07b", Command: "true"}, "control"},
		{"id too long", queue.NewJob{ID: strings.Repeat("x", 201), Command: "true"}, "longer than 200"},
		{"queue with spaces", queue.NewJob{Queue: "big queue", Command: "true"}, "queue"},
		{"negative max_retries", queue.NewJob{Command: "true", MaxRetries: ptr(-1)}, "max_retries -1 out of range 0..1000"},
		{"too many retries", queue.NewJob{Command: "true", MaxRetries: ptr(1001)}, "max_retries"},
		{"negative timeout", queue.NewJob{Command: "true", Timeout: ptr(-time.Second)}, "timeout"},
		{"timeout over 30d", queue.NewJob{Command: "true", Timeout: ptr(31 * 24 * time.Hour)}, "timeout 31d out of range 1ms..30d"},
		{"timeout just over 30d", queue.NewJob{Command: "true", Timeout: ptr(30*24*time.Hour + time.Hour)}, "timeout 721h out of range 1ms..30d"},
		{"backoff base below 1", queue.NewJob{Command: "true", BackoffBase: ptr(0.5)}, "backoff_base"},
		{"backoff base above 100", queue.NewJob{Command: "true", BackoffBase: ptr(101.0)}, "backoff_base"},
		{"max backoff over 30d", queue.NewJob{Command: "true", MaxBackoff: ptr(31 * 24 * time.Hour)}, "max_backoff 31d out of range 0..30d"},
		{"unique_for over 366d", queue.NewJob{Command: "true", UniqueKey: "k", UniqueFor: 400 * 24 * time.Hour}, "unique_for 400d out of range 0..366d"},
		{"priority too high", queue.NewJob{Command: "true", Priority: 1_000_001}, "priority"},
		{"priority too low", queue.NewJob{Command: "true", Priority: -1_000_001}, "priority"},
		{"id not UTF-8", queue.NewJob{ID: "a\xffb", Command: "true"}, "UTF-8"},
		{"env sets QUEUECTL_JOB_ID", queue.NewJob{Command: "true", Env: map[string]string{"QUEUECTL_JOB_ID": "x"}}, "QUEUECTL_JOB_ID"},
		{"env sets QUEUECTL_ATTEMPT", queue.NewJob{Command: "true", Env: map[string]string{"QUEUECTL_ATTEMPT": "1"}}, "reserved"},
		{"env empty name", queue.NewJob{Command: "true", Env: map[string]string{"": "x"}}, "env"},
		{"env name with =", queue.NewJob{Command: "true", Env: map[string]string{"A=B": "x"}}, "env"},
		{"env name with NUL", queue.NewJob{Command: "true", Env: map[string]string{"A\x00": "x"}}, "env"},
		{"env value with NUL", queue.NewJob{Command: "true", Env: map[string]string{"A": "x\x00y"}}, "value of A"},
		{"relative dir", queue.NewJob{Command: "true", Dir: "build"}, "dir"},
		{"dir with NUL", queue.NewJob{Command: "true", Dir: "/tmp/a\x00"}, "dir"},
		{"command too long to start", queue.NewJob{Command: "echo " + strings.Repeat("x", 128<<10)}, "command is 131077 bytes, over the 131071"},
		{"env entry too long to start", queue.NewJob{Command: "true", Env: map[string]string{"A": strings.Repeat("x", 128<<10)}}, "env: A=… is 131074 bytes"},
		{"env too large in all to start", queue.NewJob{Command: "true", Env: bigEnv(9)}, "env: the variables are 1105947 bytes in all, over the 1048576"},
		{"command not UTF-8", queue.NewJob{Command: "echo \xff"}, "command is not valid UTF-8"},
		{"env name not UTF-8", queue.NewJob{Command: "true", Env: map[string]string{"A\xff": "x"}}, "not valid UTF-8"},
		{"env value not UTF-8", queue.NewJob{Command: "true", Env: map[string]string{"A": "x\xff"}}, "the value of A is not valid UTF-8"},
		{"dir not UTF-8", queue.NewJob{Command: "true", Dir: "/tmp/a\xff"}, "dir \"/tmp/a\\xff\" is not valid UTF-8"},
		{"timeout below 1ms", queue.NewJob{Command: "true", Timeout: ptr(time.Microsecond)}, "timeout"},
		{"run_at beyond 9999", queue.NewJob{Command: "true", RunAt: time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)}, "run_at"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			j, err := tc.job.Resolve(queue.DefaultSettings(), t0)
			if !errors.Is(err, queue.ErrInvalid) {
				t.Fatalf("Resolve = %+v, %v; want ErrInvalid", j, err)
			}
			if !strings.Contains(err.Error(), tc.mentions) {
				t.Errorf("error %q should mention %q", err, tc.mentions)
			}
		})
	}
}

func TestResolveDefaults(t *testing.T) {
	local := time.FixedZone("UTC+2", 2*60*60)
	j, err := queue.NewJob{Command: "make report"}.Resolve(queue.DefaultSettings(), t0.In(local))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(j.ID, "j") || queue.CheckName("id", j.ID) != nil {
		t.Errorf("generated id %q", j.ID)
	}
	if j.Queue != queue.DefaultQueue || j.State != queue.StatePending || j.Attempts != 0 || j.Priority != 0 {
		t.Errorf("queue %q state %s attempts %d priority %d", j.Queue, j.State, j.Attempts, j.Priority)
	}
	if j.MaxRetries != 3 || j.BackoffBase != 2 || j.MaxBackoff != time.Hour || j.Timeout != 0 {
		t.Errorf("defaults not applied: retries %d base %g max backoff %s timeout %s", j.MaxRetries, j.BackoffBase, j.MaxBackoff, j.Timeout)
	}
	if !j.RunAt.Equal(t0) || !j.CreatedAt.Equal(t0) || !j.UpdatedAt.Equal(t0) || j.RunAt.Location() != time.UTC || j.CreatedAt.Location() != time.UTC {
		t.Errorf("times must be now, in UTC: run_at %v created_at %v", j.RunAt, j.CreatedAt)
	}

	past, err := queue.NewJob{Command: "true", RunAt: t0.Add(-time.Hour)}.Resolve(queue.DefaultSettings(), t0)
	if err != nil || !past.RunAt.Equal(t0) {
		t.Errorf("a run_at in the past runs now: %v %v", past.RunAt, err)
	}
	future, err := queue.NewJob{Command: "true", RunAt: t0.Add(time.Hour)}.Resolve(queue.DefaultSettings(), t0)
	if err != nil || !future.RunAt.Equal(t0.Add(time.Hour)) {
		t.Errorf("a future run_at is kept: %v %v", future.RunAt, err)
	}
	zero, err := queue.NewJob{Command: "true", MaxRetries: ptr(0), Timeout: ptr(time.Duration(0))}.Resolve(queue.Settings{MaxRetries: 9, BackoffBase: 3, Timeout: time.Minute}, t0)
	if err != nil || zero.MaxRetries != 0 || zero.Timeout != 0 || zero.BackoffBase != 3 {
		t.Errorf("explicit zeros must beat the defaults: %+v %v", zero, err)
	}
}

func TestNewIDUnique(t *testing.T) {
	seen := map[string]bool{}
	for range 10_000 {
		id := queue.NewID()
		if seen[id] {
			t.Fatalf("duplicate id %q", id)
		}
		seen[id] = true
	}
}

func TestEnqueueAppliesQueueOverrides(t *testing.T) {
	st, _ := openStore(t)
	if err := st.SetConfig(testCtx(t), "max-retries", "5"); err != nil {
		t.Fatal(err)
	}
	queues := map[string]queue.Overrides{
		"reports": {MaxRetries: ptr(1), Timeout: ptr(10 * time.Minute)},
		"slow":    {BackoffBase: ptr(3.0), MaxBackoff: ptr(5 * time.Minute)},
	}
	jobs, err := queue.Enqueue(testCtx(t), st, queues, []queue.NewJob{
		{ID: "plain", Command: "true"},
		{ID: "report", Queue: "reports", Command: "true"},
		{ID: "report-own", Queue: "reports", Command: "true", MaxRetries: ptr(7)},
		{ID: "slow", Queue: "slow", Command: "true"},
	}, t0)
	if err != nil {
		t.Fatal(err)
	}
	if len(jobs) != 4 {
		t.Fatalf("enqueued %d jobs, want 4", len(jobs))
	}
	tests := []struct {
		id         string
		retries    int
		timeout    time.Duration
		base       float64
		maxBackoff time.Duration
	}{
		{"plain", 5, 0, 2, time.Hour},                 // the store's config
		{"report", 1, 10 * time.Minute, 2, time.Hour}, // the queue's overrides
		{"report-own", 7, 10 * time.Minute, 2, time.Hour},
		{"slow", 5, 0, 3, 5 * time.Minute},
	}
	for _, tc := range tests {
		t.Run(tc.id, func(t *testing.T) {
			j := getJob(t, st, tc.id)
			if j.MaxRetries != tc.retries || j.Timeout != tc.timeout || j.BackoffBase != tc.base || j.MaxBackoff != tc.maxBackoff {
				t.Errorf("retries %d timeout %s base %g max backoff %s; want %d %s %g %s",
					j.MaxRetries, j.Timeout, j.BackoffBase, j.MaxBackoff, tc.retries, tc.timeout, tc.base, tc.maxBackoff)
			}
		})
	}
}

func TestEnqueueIsAllOrNothing(t *testing.T) {
	st, _ := openStore(t)
	enqueue(t, st, queue.NewJob{ID: "taken"}, t0)
	tests := []struct {
		name     string
		jobs     []queue.NewJob
		is       error
		mentions string
	}{
		{"invalid job in a batch", []queue.NewJob{{ID: "a", Command: "true"}, {ID: "b"}}, queue.ErrInvalid, "job 2"},
		{"duplicate ids in a batch", []queue.NewJob{{ID: "a", Command: "true"}, {ID: "a", Command: "true"}}, queue.ErrDuplicate, "jobs 1 and 2"},
		{"id already stored", []queue.NewJob{{ID: "a", Command: "true"}, {ID: "taken", Command: "true"}}, queue.ErrDuplicate, "taken"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := queue.Enqueue(testCtx(t), st, nil, tc.jobs, t0)
			if !errors.Is(err, tc.is) || !strings.Contains(err.Error(), tc.mentions) {
				t.Fatalf("got %v, want %v mentioning %q", err, tc.is, tc.mentions)
			}
			if _, err := st.GetJob(testCtx(t), "a"); !errors.Is(err, queue.ErrNotFound) {
				t.Errorf("job a of the failed batch was stored (%v)", err)
			}
		})
	}

	t.Run("single invalid job has no batch prefix", func(t *testing.T) {
		_, err := queue.Enqueue(testCtx(t), st, nil, []queue.NewJob{{ID: "x"}}, t0)
		if !errors.Is(err, queue.ErrInvalid) || strings.Contains(err.Error(), "job 1") {
			t.Errorf("got %v", err)
		}
	})

	// A job's error names its id only when the caller chose it.
	t.Run("after no job, with and without an id", func(t *testing.T) {
		_, err := queue.Enqueue(testCtx(t), st, nil, []queue.NewJob{{ID: "mine", Command: "true", After: []string{"nope"}}}, t0)
		if !errors.Is(err, queue.ErrInvalid) || !strings.Contains(err.Error(), `job "mine"`) || !strings.Contains(err.Error(), `no job "nope"`) {
			t.Errorf("with an id: got %v, want it named", err)
		}
		_, err = queue.Enqueue(testCtx(t), st, nil, []queue.NewJob{{Command: "true", After: []string{"nope"}}}, t0)
		if !errors.Is(err, queue.ErrInvalid) || err.Error() != `invalid: after: no job "nope"` {
			t.Errorf("without an id: got %v, want no generated id named", err)
		}
	})

	t.Run("bad stored config", func(t *testing.T) {
		if err := st.SetConfig(testCtx(t), "max-retries", "lots"); err != nil {
			t.Fatal(err)
		}
		_, err := queue.Enqueue(testCtx(t), st, nil, []queue.NewJob{{ID: "y", Command: "true"}}, t0)
		if !errors.Is(err, queue.ErrInvalid) || !strings.Contains(err.Error(), "read config") {
			t.Errorf("got %v, want a read config error", err)
		}
	})
}

// bigEnv is an env of n variables of 120 KiB each: 8 fit in
// queue.MaxEnvSize, 9 do not.
func bigEnv(n int) map[string]string {
	env := map[string]string{}
	for i := range n {
		env[string(rune('A'+i))] = strings.Repeat("x", 120<<10)
	}
	return env
}
