-- What operators steer per queue at run time (queue pause/resume/set, or a
-- configuration file's queue block): a pause and the global limits the
-- claim enforces. A queue without a row is neither paused nor limited. It
-- is kept apart from the queues table, which a configuration file replaces
-- as a whole, so that a pause survives a reload. A claim of a limited queue
-- locks its row (FOR UPDATE), so that claimers of that queue count running
-- jobs and recent starts one at a time.
CREATE TABLE queue_controls (
    name           text    COLLATE "C" PRIMARY KEY,
    paused         boolean NOT NULL DEFAULT false,
    max_running    integer NOT NULL DEFAULT 0, -- 0: no limit
    rate_limit     integer NOT NULL DEFAULT 0, -- starts per period; 0: no limit
    rate_period_us bigint  NOT NULL DEFAULT 0
);

-- Recent starts of rate-limited queues: the claim counts those within the
-- period and deletes older ones.
CREATE TABLE queue_starts (
    queue text        COLLATE "C" NOT NULL,
    at    timestamptz NOT NULL
);
CREATE INDEX queue_starts_queue ON queue_starts (queue, at);

