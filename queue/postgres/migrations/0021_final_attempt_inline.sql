-- A finished job's final attempt is kept on the job's own row instead of
-- a row of attempts (finish.go, finishAll): its number is the job's attempt
-- count, its end finished_at, its exit code, error and worker the job's
-- own, which hold the same values; the columns below hold the rest.
-- last_outcome is set exactly when the final attempt is here. A job that
-- ran once is then one row, not two: the attempts row (about 120 bytes)
-- and its primary-key entry are what most of a million finished jobs'
-- history cost. Earlier attempts, attempts recorded before this version
-- and imported ones stay in attempts; job_attempts reads both, and a retry
-- moves the final attempt to attempts before the job runs again.
-- last_outcome is an enum, 4 bytes where the text took 10: 10 MiB per
-- million finished jobs, with the row's alignment (finish.go writes only
-- the outcomes listed here on the row, others to attempts).
CREATE TYPE attempt_outcome AS ENUM ('succeeded', 'failed', 'timed_out', 'lost', 'cancelled', 'interrupted');
ALTER TABLE jobs
    ADD COLUMN last_started_at timestamptz,
    ADD COLUMN last_outcome    attempt_outcome,
    ADD COLUMN last_signal     text,
    ADD COLUMN last_output     bytea,
    ADD COLUMN last_dropped    bigint;

-- Every attempt of every job, in the order recorded (seq): the rows of
-- attempts, then the final attempt kept on the job's row.
CREATE VIEW job_attempts AS
    SELECT job_id, seq, number, started_at, finished_at, exit_code, signal, outcome, worker, error, output, dropped
    FROM attempts
    UNION ALL
    SELECT id, 9223372036854775807, attempts, last_started_at, finished_at, exit_code, last_signal, last_outcome::text,
        worker, error, last_output, coalesce(last_dropped, 0)
    FROM jobs WHERE last_outcome IS NOT NULL;

-- The slowest attempts of a minute (stats) and output pruning read these
-- as they read attempts_slowest and attempts_output_finished.
CREATE INDEX jobs_slowest ON jobs (date_trunc('minute', finished_at AT TIME ZONE 'UTC'),
    ((extract(epoch FROM finished_at - coalesce(last_started_at, finished_at)) * 1000000)::bigint))
    WHERE last_outcome IS NOT NULL;
CREATE INDEX jobs_output_finished ON jobs (finished_at) WHERE last_output IS NOT NULL;
