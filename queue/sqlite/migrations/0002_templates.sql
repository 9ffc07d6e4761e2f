-- Recurring jobs: a template's definition (JSON) and its schedule state.
CREATE TABLE templates (
    name            TEXT    PRIMARY KEY,
    definition      TEXT    NOT NULL,
    cursor          INTEGER NOT NULL,
    -- The one run waiting for the previous run to end (overlap = queue):
    -- its slot and kind (cron or manual).
    pending_trigger INTEGER,
    pending_kind    TEXT,
    updated_at      INTEGER NOT NULL
);

-- Queues declared by a configuration file, with their retry overrides.
CREATE TABLE queues (
    name         TEXT    PRIMARY KEY,
    concurrency  INTEGER NOT NULL,
    max_retries  INTEGER,
    backoff_base REAL,
    max_backoff_us INTEGER,
    timeout_us   INTEGER
);

-- One job per (template, slot), whatever the number of schedulers.
ALTER TABLE jobs ADD COLUMN fire_key TEXT;
CREATE UNIQUE INDEX jobs_fire_key ON jobs (fire_key) WHERE fire_key IS NOT NULL;
-- The overlap check and a template's newest job.
CREATE INDEX jobs_template ON jobs (template, created_at) WHERE template IS NOT NULL;
