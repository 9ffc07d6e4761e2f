package queue

import (
	"context"
	"time"
)

// Store is the durable state of queuectl. Every database (queue/sqlite,
// queue/postgres) implements it, and queue/storetest holds the conformance
// suite each implementation must pass on a real database.
//
// Stores map driver errors to the sentinel errors of this package. Methods
// that change job state check the caller's claim (worker and attempt), so a
// worker that lost its lease can never overwrite a rescuer's decision.
type Store interface {
	// InsertJobs stores fully resolved jobs in one transaction, all or none,
	// durably (synced to disk) before it returns. A taken id fails the whole
	// call with ErrDuplicate naming the id.
	InsertJobs(ctx context.Context, jobs []*Job) error

	// BeginImport starts a bulk insert of resolved jobs, stored a chunk
	// per transaction yet all or nothing (see Import): no transaction
	// holds a lock other writers need for longer than one chunk.
	BeginImport(ctx context.Context) (Import, error)

	// ClaimJobs atomically moves up to p.Limit runnable jobs (pending, or
	// failed whose run_at has come) to processing for p.Worker, highest
	// priority first, then earliest run_at, then oldest. No job is ever
	// returned to two callers.
	ClaimJobs(ctx context.Context, p ClaimParams) ([]*Job, error)

	// FinishJobs records attempt outcomes, each with its history row, in one
	// transaction. A finish whose claim (job, worker, attempt) no longer
	// holds is skipped: applied[i] reports whether finish i took effect.
	FinishJobs(ctx context.Context, fs []Finish) (applied []bool, err error)

	// Heartbeat renews the worker's registration and the leases of the jobs
	// it holds. It reports the jobs it no longer holds, the jobs a user asked
	// to cancel, and whether the worker was asked to stop.
	Heartbeat(ctx context.Context, p HeartbeatParams) (HeartbeatResult, error)

	// RescueCandidates lists processing jobs whose lease expired by now, or
	// whose worker registered with host and bootID both (the caller checks
	// its process).
	RescueCandidates(ctx context.Context, p RescueParams) ([]*Job, error)

	// NextRunAt returns the earliest run_at among runnable jobs in the given
	// queues (all when empty), or the zero time if there are none.
	NextRunAt(ctx context.Context, queues []string) (time.Time, error)

	// Wakeups delivers a (coalesced) signal whenever any process using the
	// same database may have made new work runnable. It is a hint: the engine
	// also polls. The channel is closed when ctx ends.
	Wakeups(ctx context.Context) (<-chan struct{}, error)

	RegisterWorker(ctx context.Context, w *WorkerInfo) error
	UnregisterWorker(ctx context.Context, id string) error
	ListWorkers(ctx context.Context) ([]*WorkerInfo, error)
	// RequestStop asks the given workers (all when ids is empty) to drain and exit.
	RequestStop(ctx context.Context, ids []string) error

	GetJob(ctx context.Context, id string) (*Job, error)
	ListJobs(ctx context.Context, p ListParams) ([]*Job, error)
	Attempts(ctx context.Context, jobID string) ([]*Attempt, error)
	// Output returns the captured output of one attempt (the latest when number is 0).
	Output(ctx context.Context, jobID string, number int) (*Attempt, error)
	// OutputAt returns the attempt at index i (0 is the oldest) of the job's
	// history as Attempts lists it, with its captured output. Attempt
	// numbers start over when a dead job is retried, so a number can name
	// two attempts; an index names one. ErrNotFound past the last.
	OutputAt(ctx context.Context, jobID string, i int) (*Attempt, error)
	// SaveLiveOutput stores what a running attempt has written so far,
	// replacing what was saved before, while the claim (job, worker,
	// attempt) holds; otherwise it does nothing. FinishJobs drops it.
	SaveLiveOutput(ctx context.Context, p LiveOutput) error
	// LiveOutput returns what the job's running attempt has written so far:
	// ErrNotFound when the job is not running or nothing is saved yet.
	LiveOutput(ctx context.Context, jobID string) (*LiveOutput, error)
	CountJobs(ctx context.Context) ([]Count, error)
	// RunTimes sums the run-time histograms the store keeps of finished
	// attempts over a window (see RunTimeParams), per queue, outcome
	// class and run-time bucket: a number of rows bounded by the window's
	// hours, whatever the number of attempts.
	RunTimes(ctx context.Context, p RunTimeParams) ([]RunTimeCount, error)
	// SlowestAttempts returns the p.Limit longest attempts of the window
	// RunTimes counts for p.Since, longest first (equal ones in any
	// order), reading a bounded number of index entries per minute.
	SlowestAttempts(ctx context.Context, p SlowestParams) ([]AttemptStat, error)
	// Metrics returns the figures the database keeps for monitoring: a
	// bounded number of cheap reads, whatever the size of the tables.
	Metrics(ctx context.Context, now time.Time) (*Metrics, error)

	// RetryJobs moves failed or dead jobs (all dead jobs when p.AllDead) back
	// to pending, runnable now, with attempts reset. It returns the ids moved.
	RetryJobs(ctx context.Context, p RetryParams) ([]string, error)
	// CancelJob cancels a pending or failed job at once; for a processing job
	// it sets the cancel request the worker acts on. It returns the state the
	// job had.
	CancelJob(ctx context.Context, id string, now time.Time) (State, error)
	// DiscardJobs deletes jobs and their history for good: the named ones
	// (all or none; a running job cannot be discarded), or every dead job
	// (of p.Queue when set) when p.AllDead. It returns the ids deleted.
	DiscardJobs(ctx context.Context, p DiscardParams) ([]string, error)
	// DeleteJobs deletes finished jobs (and their history) last updated before p.Before.
	DeleteJobs(ctx context.Context, p DeleteParams) (int, error)
	// PruneOutput drops the captured output of attempts finished before
	// p.Before (the jobs and their history stay); the bytes dropped are
	// added to the attempt's Dropped count. It returns the attempts changed.
	PruneOutput(ctx context.Context, p PruneOutputParams) (int, error)

	// ApplyQueues replaces the queues declared by a configuration file.
	ApplyQueues(ctx context.Context, qs []QueueConfig) error
	// Queues returns the declared queues, by name order.
	Queues(ctx context.Context) ([]QueueConfig, error)

	// ApplyTemplates makes the store's recurring jobs exactly ts: a new
	// template's cursor starts at now, a changed one keeps its cursor, and
	// one missing from ts is deleted, so it stops firing.
	ApplyTemplates(ctx context.Context, ts []*Template, now time.Time) error
	// Templates returns every template with its state and newest job.
	Templates(ctx context.Context) ([]*Template, error)
	// FireTemplate fires one slot (or a manual trigger) of a template in one
	// transaction: it enforces the overlap policy against the template's
	// active jobs, inserts the job unless its fire key exists already, and
	// moves the cursor. Any number of schedulers may fire the same slot; at
	// most one job results.
	FireTemplate(ctx context.Context, p FireParams) (FireResult, error)

	// ApplyConfig applies a service's configuration file in one
	// transaction, as ApplyQueues, UpdateQueueControls (each of c.Limits)
	// and ApplyTemplates would one after another: a failure changes
	// nothing. It returns the stored controls of the queues c.Limits
	// names as they were before (a queue without a stored control has
	// none).
	ApplyConfig(ctx context.Context, c ConfigApply) ([]QueueControl, error)

	// UpdateQueueControls changes the pause and limits of the named queues
	// in one transaction (see QueueControl); claims everywhere obey them
	// from the next claim on.
	UpdateQueueControls(ctx context.Context, u ControlUpdate) error
	// QueueControls returns every stored queue control, by name.
	QueueControls(ctx context.Context) ([]QueueControl, error)
	// CountScheduled returns, per queue, the pending jobs whose run_at is
	// after now.
	CountScheduled(ctx context.Context, now time.Time) (map[string]int, error)

	// JobEvents delivers a (coalesced) signal whenever any process using
	// the same database may have ended an attempt, cancelled a job or saved
	// live output. It is a hint, like Wakeups.
	JobEvents(ctx context.Context) (<-chan struct{}, error)

	GetConfig(ctx context.Context) (map[string]string, error)
	SetConfig(ctx context.Context, key, value string) error

	// RevokeSession records that a browser session ended before its
	// expiry (its user signed out), so that every process sharing the
	// store can refuse it. Recording a session twice is no error. The
	// revocations of sessions that expired before p.PruneBefore are
	// deleted in the same transaction, so the store keeps only the recent
	// ones.
	RevokeSession(ctx context.Context, p RevokeSessionParams) error
	// RevokedSessions lists the revocations numbered after p.After (all
	// when 0), by number, leaving out those whose sessions expired before
	// p.Now. Numbers grow in commit order and are never used again: a
	// reader that has seen number n has seen every revocation committed
	// before it, so it may keep what it read and ask for newer ones only.
	RevokedSessions(ctx context.Context, p RevokedSessionsParams) ([]SessionRevocation, error)

	Close() error
}

// DatabaseClock is a Store whose leases run on the database server's clock
// (PostgreSQL, shared by workers on hosts whose clocks may disagree).
// ClaimJobs and Heartbeat start each lease at the database's time and take
// only its length from the caller (LeaseUntil minus Now), and worker
// heartbeats are stamped with that time too; the rescuer reads DatabaseNow
// and compares leases and heartbeats with it, so a skewed host clock can
// neither shorten a lease nor make a live worker look silent. ClaimJobs
// also stamps and counts a rate-limited queue's starts on the database's
// clock, so that claimers on skewed hosts share one window. A store
// without it (SQLite, on one host) uses the times its callers pass.
type DatabaseClock interface {
	DatabaseNow(ctx context.Context) (time.Time, error)
}

// FinishClaimer is a store that can record outcomes and claim jobs in one
// transaction: FinishJobs(fs), then ClaimJobs for each of cs in turn, all
// or nothing (a job an outcome releases is claimable by a claim whose Now
// is not before the outcome's). Where every write takes one lock
// (SQLite), a worker whose slot frees as its job ends then pays one write
// transaction per job instead of two; the engine sends its claims through
// the batch of outcomes when the store is one. PostgreSQL is not one: its
// writers overlap, and a joined claim would wait for the outcome
// (docs/benchmarks.md).
type FinishClaimer interface {
	FinishAndClaim(ctx context.Context, fs []Finish, cs []ClaimParams) (applied []bool, claimed [][]*Job, err error)
}

// Tidier is a store that keeps its own tables in shape when nothing else
// does (PostgreSQL whose server runs without autovacuum; SQLite, whose
// imports left by a process that died wait for a process to finish them).
// Engines call
// Tidy now and then; it returns at once when there is nothing to do, is
// safe to call from many processes at a time, and reports what it did
// ("vacuum jobs", say), for the log.
type Tidier interface {
	Tidy(ctx context.Context) (done []string, err error)
}

// ClaimParams selects and leases jobs for one worker.
type ClaimParams struct {
	Worker     string
	Queues     []string // empty: every queue
	Limit      int
	Now        time.Time
	LeaseUntil time.Time // Now plus the lease (see DatabaseClock)
}

// Finish is the outcome of one attempt and the state it moves the job to.
type Finish struct {
	JobID     string
	Worker    string // the claim that must still hold
	Attempt   int    // the claim's attempt number
	State     State  // completed, failed, dead, cancelled, or pending (interrupted)
	Attempts  int    // the job's attempt count after this finish
	Uncharged int    // the job's uncharged (interrupted) attempts after this finish
	RunAt     time.Time
	ExitCode  *int
	Error     string
	Record    Attempt // the history row
	Now       time.Time
	// LeaseExpiredBy, when set, makes the finish apply only if the job's
	// lease had expired by then: a rescue of a worker that may be alive
	// must not win over a lease it renewed meanwhile.
	LeaseExpiredBy time.Time
}

// HeartbeatParams renews a worker and its leases.
type HeartbeatParams struct {
	Worker     string
	Jobs       []string
	Now        time.Time
	LeaseUntil time.Time // Now plus the lease (see DatabaseClock)
}

// HeartbeatResult tells a worker what changed under it.
type HeartbeatResult struct {
	Lost   []string // jobs it no longer holds
	Cancel []string // jobs a user asked to cancel
	// Busy are jobs whose rows another transaction held (a finish in
	// flight, say): neither renewed nor lost, asked again next time. A
	// store whose renewals skip rows others hold rather than wait for
	// them (PostgreSQL, so that a renewal cannot deadlock with a batch of
	// finishes) reports them here; the worker does not move their fences.
	Busy          []string
	StopRequested bool
}

// RescueParams selects jobs whose worker may be gone.
type RescueParams struct {
	Now    time.Time
	Host   string
	BootID string
}

// ListParams filters ListJobs. Results are newest first.
type ListParams struct {
	States []State
	Queue  string
	// Search keeps jobs whose id or command contains this text (case-sensitive).
	Search string
	// Labels keeps jobs that carry every one of these labels.
	Labels map[string]string
	// DueAfter, when set, keeps only jobs whose run_at is later: with
	// States {pending} and the current time, the scheduled jobs.
	DueAfter time.Time
	// After is a page cursor: only jobs listed after the job with this id
	// (the last one of the previous page). Jobs added meanwhile do not shift
	// the pages. An unknown id is ErrNotFound.
	After string
	Limit int
}

// LiveOutput is the output of a running attempt so far: at most the last
// LiveOutputMax bytes of it, and how many bytes the attempt has written.
type LiveOutput struct {
	JobID     string
	Worker    string // the claim that must still hold
	Attempt   int
	Output    []byte
	Written   int64
	UpdatedAt time.Time
}

// LiveOutputMax bounds the live output a worker saves: the tail a person
// follows, not the record (the whole capped output is stored when the
// attempt ends).
const LiveOutputMax = 64 << 10

// LiveTail is the end of b that a store keeps as live output.
func LiveTail(b []byte) []byte {
	if b == nil {
		return []byte{}
	}
	return b[max(0, len(b)-LiveOutputMax):]
}

// Count is the number of jobs in one queue and state.
type Count struct {
	Queue string
	State State
	N     int
}

// AttemptStat is one finished attempt, for statistics (the slowest).
type AttemptStat struct {
	JobID      string
	Queue      string
	Outcome    Outcome
	Duration   time.Duration
	FinishedAt time.Time
}

// RetryParams selects jobs to retry.
type RetryParams struct {
	IDs     []string
	AllDead bool
	Queue   string // with AllDead: only this queue's dead jobs ("" every queue)
	Now     time.Time
}

// DiscardParams selects jobs to delete for good.
type DiscardParams struct {
	IDs     []string
	AllDead bool
	Queue   string // with AllDead: only this queue's dead jobs ("" every queue)
}

// Metrics are the figures a store keeps for monitoring. The totals are
// kept by the database as attempts start and finish, so they count the work
// of every process and host; they only grow (a Prometheus counter).
type Metrics struct {
	RunTimes    []MetricTotal // finished attempts by queue, outcome and run time bucket
	StartDelays []MetricTotal // claimed jobs by queue and run_at-to-start delay bucket
	// OldestPending is, per queue with pending jobs due by now, the
	// earliest run_at among them.
	OldestPending map[string]time.Time
}

// MetricTotal is one bucket of a histogram the store keeps: the number and
// total duration of observations greater than the previous bucket's bound
// and at most LE (math.MaxInt64 for the last, unbounded bucket).
type MetricTotal struct {
	Queue   string
	Outcome Outcome // RunTimes only
	LE      time.Duration
	N       int64
	Sum     time.Duration
}

// DeleteParams selects finished jobs to delete.
type DeleteParams struct {
	Before time.Time
	States []State // empty: every finished state
	// Limit bounds one call (0: no bound), so that retention deletes in
	// small batches that never hold the write lock for long.
	Limit int
	// DryRun counts the jobs that would be deleted and deletes nothing.
	DryRun bool
}

// PruneOutputParams selects attempts whose captured output to drop.
type PruneOutputParams struct {
	Before time.Time // attempts finished before this
	Limit  int       // 0: no bound
	DryRun bool      // count only
}

// SessionRevocation is a browser session that ended before its expiry.
type SessionRevocation struct {
	Seq     int64     // grows in commit order (RevokedSessions)
	Nonce   []byte    // names the session
	Expires time.Time // the session's own expiry: past it, it is refused anyway
}

// RevokeSessionParams records one ended session.
type RevokeSessionParams struct {
	Nonce   []byte
	Expires time.Time
	// PruneBefore drops the revocations of sessions that expired before it.
	PruneBefore time.Time
}

// RevokedSessionsParams selects revocations to read.
type RevokedSessionsParams struct {
	After int64     // the last Seq read; 0 reads from the first
	Now   time.Time // revocations of sessions that expired before it are left out
}

// JobRecord is one job with its whole history (outputs included), as
// moved from one store to another.
type JobRecord struct {
	Job     *Job
	History []*Attempt
}
