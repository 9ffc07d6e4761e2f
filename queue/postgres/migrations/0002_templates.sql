-- Recurring jobs: a template's definition (JSON text, compared as written)
-- and its schedule state.
CREATE TABLE templates (
    name            text COLLATE "C" PRIMARY KEY,
    definition      text NOT NULL,
    cursor          timestamptz NOT NULL,
    -- The one run waiting for the previous run to end (overlap = queue):
    -- its slot and kind (cron or manual).
    pending_trigger timestamptz,
    pending_kind    text,
    updated_at      timestamptz NOT NULL
);

-- Queues declared by a configuration file, with their retry overrides.
CREATE TABLE queues (
    name           text COLLATE "C" PRIMARY KEY,
    concurrency    integer NOT NULL,
    max_retries    integer,
    backoff_base   double precision,
    max_backoff_us bigint,
    timeout_us     bigint
);

-- One job per (template, slot), whatever the number of schedulers.
ALTER TABLE jobs ADD COLUMN fire_key text COLLATE "C";
CREATE UNIQUE INDEX jobs_fire_key ON jobs (fire_key) WHERE fire_key IS NOT NULL;
-- The overlap check and a template's newest job.
CREATE INDEX jobs_template ON jobs (template, created_at, seq) WHERE template IS NOT NULL;
