-- The output a running attempt has written so far (its last 64 KiB), saved
-- by its worker about once a second while it changes, so that the dashboard
-- and the API can follow a job from any host. A finish deletes the row: the
-- attempt's whole output is then in attempts.
CREATE TABLE live_output (
    job_id     text        COLLATE "C" PRIMARY KEY REFERENCES jobs (id) ON DELETE CASCADE,
    worker     text        NOT NULL,
    attempt    integer     NOT NULL,
    output     bytea       NOT NULL,
    written    bigint      NOT NULL,
    updated_at timestamptz NOT NULL
);
