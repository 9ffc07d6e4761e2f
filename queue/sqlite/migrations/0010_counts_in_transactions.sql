-- The monitoring counters are kept by the store's write transactions from
-- now on: each adds up what it changed and writes it with one upsert before
-- it commits (counts.go). The per-row triggers cost three upserts per
-- claimed or finished job.
DROP TRIGGER attempts_count;
DROP TRIGGER jobs_count_start;
DROP TRIGGER jobs_count_insert;
DROP TRIGGER jobs_count_delete;
DROP TRIGGER jobs_count_move;

-- The three counter tables become one, so that a transaction's counts are
-- one statement and the rows of a queue share a page: jobs by state
-- (kind 'jobs', key the state), start delays (kind 'start') and finished
-- attempts' run times (kind 'run', key the outcome), by histogram bucket.
CREATE TABLE counters (
    queue  TEXT    NOT NULL,
    kind   TEXT    NOT NULL,
    key    TEXT    NOT NULL,
    le_us  INTEGER NOT NULL, -- 0 for kind 'jobs'
    n      INTEGER NOT NULL,
    sum_us INTEGER NOT NULL,
    PRIMARY KEY (queue, kind, key, le_us)
) WITHOUT ROWID;

INSERT INTO counters (queue, kind, key, le_us, n, sum_us)
    SELECT queue, 'run', outcome, le_us, n, sum_us FROM attempt_totals;
INSERT INTO counters (queue, kind, key, le_us, n, sum_us)
    SELECT queue, 'start', '', le_us, n, sum_us FROM start_delay_totals;
-- The job counts start again from a full count, once. Staged jobs (a bulk
-- import not yet published) are no longer counted.
INSERT INTO counters (queue, kind, key, le_us, n, sum_us)
    SELECT queue, 'jobs', state, 0, count(*), 0 FROM jobs WHERE state <> 'staged' GROUP BY queue, state;

DROP TABLE job_counts;
DROP TABLE attempt_totals;
DROP TABLE start_delay_totals;

-- The old tables' names, for readers.
CREATE VIEW job_counts AS SELECT queue, key AS state, n FROM counters WHERE kind = 'jobs';
CREATE VIEW attempt_totals AS SELECT queue, key AS outcome, le_us, n, sum_us FROM counters WHERE kind = 'run';
CREATE VIEW start_delay_totals AS SELECT queue, le_us, n, sum_us FROM counters WHERE kind = 'start';
