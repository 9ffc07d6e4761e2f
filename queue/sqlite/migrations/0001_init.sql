-- Times are integer microseconds since the Unix epoch (UTC).
CREATE TABLE jobs (
    id               TEXT    NOT NULL UNIQUE,
    queue            TEXT    NOT NULL,
    command          TEXT    NOT NULL,
    state            TEXT    NOT NULL,
    priority         INTEGER NOT NULL DEFAULT 0,
    attempts         INTEGER NOT NULL DEFAULT 0,
    max_retries      INTEGER NOT NULL,
    timeout_us       INTEGER NOT NULL DEFAULT 0,
    backoff_base     REAL    NOT NULL,
    max_backoff_us   INTEGER NOT NULL,
    run_at           INTEGER NOT NULL,
    created_at       INTEGER NOT NULL,
    updated_at       INTEGER NOT NULL,
    started_at       INTEGER,
    finished_at      INTEGER,
    exit_code        INTEGER,
    error            TEXT,
    worker           TEXT,
    lease_until      INTEGER,
    cancel_requested INTEGER NOT NULL DEFAULT 0,
    env              TEXT,
    dir              TEXT,
    template         TEXT,
    scheduled_at     INTEGER
);

-- The claim query's filter and order, with and without a queue filter.
CREATE INDEX jobs_claim ON jobs (priority DESC, run_at, created_at)
    WHERE state IN ('pending', 'failed');
CREATE INDEX jobs_claim_queue ON jobs (queue, priority DESC, run_at, created_at)
    WHERE state IN ('pending', 'failed');
-- list --state and status counts (each entry ends in the rowid, so a
-- state's jobs come newest first); rescue reads the processing ones.
CREATE INDEX jobs_state ON jobs (state);

CREATE TABLE attempts (
    job_id      TEXT    NOT NULL REFERENCES jobs (id) ON DELETE CASCADE,
    number      INTEGER NOT NULL,
    started_at  INTEGER,
    finished_at INTEGER NOT NULL,
    exit_code   INTEGER,
    signal      TEXT,
    outcome     TEXT    NOT NULL,
    worker      TEXT,
    error       TEXT,
    output      BLOB,
    dropped     INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX attempts_job ON attempts (job_id, number);
CREATE INDEX attempts_finished ON attempts (finished_at);

CREATE TABLE workers (
    id             TEXT    PRIMARY KEY,
    pid            INTEGER NOT NULL,
    host           TEXT    NOT NULL,
    boot_id        TEXT    NOT NULL,
    proc_start     INTEGER NOT NULL,
    queues         TEXT    NOT NULL,
    started_at     INTEGER NOT NULL,
    heartbeat_at   INTEGER NOT NULL,
    stop_requested INTEGER NOT NULL DEFAULT 0
);

CREATE TABLE config (
    key   TEXT PRIMARY KEY,
    value TEXT NOT NULL
);
