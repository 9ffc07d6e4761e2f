-- The output a running attempt has written so far (its last 64 KiB), saved
-- by its worker about once a second while it changes, so that the dashboard
-- and the API can follow a job from any process. A finish deletes the row:
-- the attempt's whole output is then in attempts.
CREATE TABLE live_output (
    job_id     TEXT    PRIMARY KEY REFERENCES jobs (id) ON DELETE CASCADE,
    worker     TEXT    NOT NULL,
    attempt    INTEGER NOT NULL,
    output     BLOB    NOT NULL,
    written    INTEGER NOT NULL,
    updated_at INTEGER NOT NULL
);
