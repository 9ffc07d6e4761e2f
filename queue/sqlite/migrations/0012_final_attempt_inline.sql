-- A finished job's final attempt is kept on the job's own row instead of
-- a row of attempts (finish.go): its number is the job's attempt count,
-- its end finished_at, its exit code, error and worker the job's own,
-- which hold the same values (storekit.FinalOnRow); the columns below
-- hold the rest. last_outcome is set exactly when the final attempt is
-- here. A job that ran once then writes its row and no attempts row: the
-- attempts row and its three index entries were a third of the B-tree
-- writes of a finished job. Earlier attempts, attempts recorded before
-- this version and imported ones stay in attempts; job_attempts reads
-- both, and a retry moves the final attempt to attempts before the job
-- runs again (admin.go). last_output is NULL when the attempt printed
-- nothing.
ALTER TABLE jobs ADD COLUMN last_started_at INTEGER;
ALTER TABLE jobs ADD COLUMN last_outcome TEXT;
ALTER TABLE jobs ADD COLUMN last_signal TEXT;
ALTER TABLE jobs ADD COLUMN last_output BLOB;
ALTER TABLE jobs ADD COLUMN last_dropped INTEGER;

-- Every attempt of every job, in the order recorded (seq): the rows of
-- attempts, then the final attempt kept on the job's row.
CREATE VIEW job_attempts AS
    SELECT job_id, rowid AS seq, number, started_at, finished_at, exit_code, signal, outcome, worker, error, output, dropped
    FROM attempts
    UNION ALL
    SELECT id, 9223372036854775807, attempts, last_started_at, finished_at, exit_code, last_signal, last_outcome,
        worker, error, last_output, coalesce(last_dropped, 0)
    FROM jobs WHERE last_outcome IS NOT NULL;

-- The slowest attempts of a minute (stats) and output pruning read these
-- as they read attempts_slowest and attempts_finished.
CREATE INDEX jobs_slowest ON jobs (finished_at / 60000000, finished_at - coalesce(last_started_at, finished_at))
    WHERE last_outcome IS NOT NULL;
CREATE INDEX jobs_output_finished ON jobs (finished_at) WHERE last_output IS NOT NULL;
