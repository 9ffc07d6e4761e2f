-- queuectl schema, version 1.
--
-- Times are timestamptz (microsecond precision); durations are bigint
-- microseconds. Identifiers and names use the "C" collation so that they
-- compare and sort bytewise, whatever the database's locale.

CREATE TABLE jobs (
    -- Insertion order: the tie-break for jobs created at the same instant.
    seq              bigint  GENERATED ALWAYS AS IDENTITY,
    id               text    COLLATE "C" PRIMARY KEY,
    queue            text    COLLATE "C" NOT NULL,
    command          text    NOT NULL,
    state            text    COLLATE "C" NOT NULL
        CHECK (state IN ('pending', 'processing', 'completed', 'failed', 'dead', 'cancelled')),
    priority         integer NOT NULL DEFAULT 0,
    attempts         integer NOT NULL DEFAULT 0,
    max_retries      integer NOT NULL,
    timeout_us       bigint  NOT NULL DEFAULT 0,
    backoff_base     double precision NOT NULL,
    max_backoff_us   bigint  NOT NULL,
    run_at           timestamptz NOT NULL,
    created_at       timestamptz NOT NULL,
    updated_at       timestamptz NOT NULL,
    started_at       timestamptz,
    finished_at      timestamptz,
    exit_code        integer,
    error            text,
    worker           text    COLLATE "C",
    lease_until      timestamptz,
    cancel_requested boolean NOT NULL DEFAULT false,
    env              jsonb,
    dir              text,
    template         text,
    scheduled_at     timestamptz
);

-- The claim query's filter and order, without and with a single-queue filter.
CREATE INDEX jobs_claim ON jobs (priority DESC, run_at, created_at, seq)
    WHERE state IN ('pending', 'failed');
CREATE INDEX jobs_claim_queue ON jobs (queue, priority DESC, run_at, created_at, seq)
    WHERE state IN ('pending', 'failed');
-- Idle workers ask for the earliest run_at among runnable jobs.
CREATE INDEX jobs_next_run ON jobs (run_at)
    WHERE state IN ('pending', 'failed');
-- Rescue scans only processing jobs; the worker list shows what each holds.
CREATE INDEX jobs_processing ON jobs (lease_until) WHERE state = 'processing';
CREATE INDEX jobs_processing_worker ON jobs (worker) WHERE state = 'processing';
-- list --state, newest first; list, newest first; status counts; cleanup.
CREATE INDEX jobs_state_created ON jobs (state, created_at, seq);
CREATE INDEX jobs_created ON jobs (created_at, seq);
CREATE INDEX jobs_queue_state ON jobs (queue, state);
CREATE INDEX jobs_state_updated ON jobs (state, updated_at);

CREATE TABLE attempts (
    -- Insertion order: history is listed in the order it was written.
    seq         bigint  GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    job_id      text    COLLATE "C" NOT NULL REFERENCES jobs (id) ON DELETE CASCADE,
    number      integer NOT NULL,
    started_at  timestamptz,
    finished_at timestamptz NOT NULL,
    exit_code   integer,
    signal      text,
    outcome     text    NOT NULL,
    worker      text,
    error       text,
    output      bytea,
    dropped     bigint  NOT NULL DEFAULT 0
);
CREATE INDEX attempts_job ON attempts (job_id, seq);
CREATE INDEX attempts_finished ON attempts (finished_at);

CREATE TABLE workers (
    id             text    COLLATE "C" PRIMARY KEY,
    pid            integer NOT NULL,
    host           text    NOT NULL,
    boot_id        text    NOT NULL,
    proc_start     bigint  NOT NULL,
    queues         text[],
    started_at     timestamptz NOT NULL,
    heartbeat_at   timestamptz NOT NULL,
    stop_requested boolean NOT NULL DEFAULT false
);
CREATE INDEX workers_host ON workers (host);

CREATE TABLE config (
    key   text COLLATE "C" PRIMARY KEY,
    value text NOT NULL
);
