-- Figures for monitoring, kept by the database as attempts start and
-- finish, so that they count the work of every process and a scrape reads a
-- few small tables instead of scanning jobs and attempts.

-- Histogram bucket upper bounds in microseconds; the last is unbounded.
CREATE TABLE metric_buckets (le_us INTEGER PRIMARY KEY);
INSERT INTO metric_buckets (le_us) VALUES (5000), (10000), (25000), (50000), (100000), (250000),
    (500000), (1000000), (2500000), (5000000), (10000000), (30000000), (60000000), (120000000),
    (300000000), (600000000), (1800000000), (3600000000), (9223372036854775807);

-- Finished attempts by queue, outcome and run time bucket.
CREATE TABLE attempt_totals (
    queue   TEXT    NOT NULL,
    outcome TEXT    NOT NULL,
    le_us   INTEGER NOT NULL,
    n       INTEGER NOT NULL,
    sum_us  INTEGER NOT NULL,
    PRIMARY KEY (queue, outcome, le_us)
) WITHOUT ROWID;

CREATE TRIGGER attempts_count AFTER INSERT ON attempts
BEGIN
    INSERT INTO attempt_totals (queue, outcome, le_us, n, sum_us)
    VALUES ((SELECT queue FROM jobs WHERE id = NEW.job_id), NEW.outcome,
        (SELECT min(le_us) FROM metric_buckets
            WHERE le_us >= NEW.finished_at - coalesce(NEW.started_at, NEW.finished_at)),
        1, NEW.finished_at - coalesce(NEW.started_at, NEW.finished_at))
    ON CONFLICT (queue, outcome, le_us) DO UPDATE SET n = n + 1, sum_us = sum_us + excluded.sum_us;
END;

-- Claimed jobs by queue and the delay from run_at (when the job became due)
-- to the start of the attempt.
CREATE TABLE start_delay_totals (
    queue  TEXT    NOT NULL,
    le_us  INTEGER NOT NULL,
    n      INTEGER NOT NULL,
    sum_us INTEGER NOT NULL,
    PRIMARY KEY (queue, le_us)
) WITHOUT ROWID;

CREATE TRIGGER jobs_count_start AFTER UPDATE OF state ON jobs
    WHEN NEW.state = 'processing' AND OLD.state <> 'processing'
BEGIN
    INSERT INTO start_delay_totals (queue, le_us, n, sum_us)
    VALUES (NEW.queue,
        (SELECT min(le_us) FROM metric_buckets WHERE le_us >= max(0, NEW.started_at - OLD.run_at)),
        1, max(0, NEW.started_at - OLD.run_at))
    ON CONFLICT (queue, le_us) DO UPDATE SET n = n + 1, sum_us = sum_us + excluded.sum_us;
END;

-- The age of each queue's oldest due job: one index seek per queue.
CREATE INDEX jobs_pending_run_at ON jobs (queue, run_at) WHERE state = 'pending';
