-- Job counts by queue and state, kept by triggers, so that status, the
-- dashboard and every /metrics scrape read a few rows instead of scanning
-- the jobs table (a covering index still takes ~250 ms at a million jobs;
-- this takes well under a millisecond). One writer at a time holds the
-- database, so the counter rows cost no contention.
CREATE TABLE job_counts (
    queue TEXT    NOT NULL,
    state TEXT    NOT NULL,
    n     INTEGER NOT NULL,
    PRIMARY KEY (queue, state)
) WITHOUT ROWID;

INSERT INTO job_counts (queue, state, n) SELECT queue, state, count(*) FROM jobs GROUP BY queue, state;

CREATE TRIGGER jobs_count_insert AFTER INSERT ON jobs
BEGIN
    INSERT INTO job_counts (queue, state, n) VALUES (NEW.queue, NEW.state, 1)
    ON CONFLICT (queue, state) DO UPDATE SET n = n + 1;
END;

CREATE TRIGGER jobs_count_delete AFTER DELETE ON jobs
BEGIN
    UPDATE job_counts SET n = n - 1 WHERE queue = OLD.queue AND state = OLD.state;
END;

CREATE TRIGGER jobs_count_move AFTER UPDATE OF state, queue ON jobs
    WHEN NEW.state <> OLD.state OR NEW.queue <> OLD.queue
BEGIN
    UPDATE job_counts SET n = n - 1 WHERE queue = OLD.queue AND state = OLD.state;
    INSERT INTO job_counts (queue, state, n) VALUES (NEW.queue, NEW.state, 1)
    ON CONFLICT (queue, state) DO UPDATE SET n = n + 1;
END;
