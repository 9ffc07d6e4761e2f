-- What operators steer per queue at run time (queue pause/resume/set, or a
-- configuration file's queue block): a pause and the global limits the
-- claim enforces. A queue without a row is neither paused nor limited. It
-- is kept apart from the queues table, which a configuration file replaces
-- as a whole, so that a pause survives a reload.
CREATE TABLE queue_controls (
    name           TEXT    PRIMARY KEY,
    paused         INTEGER NOT NULL DEFAULT 0,
    max_running    INTEGER NOT NULL DEFAULT 0, -- 0: no limit
    rate_limit     INTEGER NOT NULL DEFAULT 0, -- starts per period; 0: no limit
    rate_period_us INTEGER NOT NULL DEFAULT 0
) WITHOUT ROWID;

-- Recent starts of rate-limited queues: the claim counts those within the
-- period and deletes older ones.
CREATE TABLE queue_starts (
    queue TEXT    NOT NULL,
    at    INTEGER NOT NULL
);
CREATE INDEX queue_starts_queue ON queue_starts (queue, at);

