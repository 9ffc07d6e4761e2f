-- Shaping jobs: labels, unique keys, hooks and dependencies.

-- Labels (a JSON object of strings) and the outcome hooks copied onto the
-- job at enqueue (a JSON object: on_success, on_failure, on_dead).
ALTER TABLE jobs ADD COLUMN labels TEXT;
ALTER TABLE jobs ADD COLUMN hooks TEXT;

-- At most one unfinished job per unique key: the constraint, not a read,
-- decides between enqueuers that race.
ALTER TABLE jobs ADD COLUMN unique_key TEXT;
CREATE UNIQUE INDEX jobs_unique_key ON jobs (unique_key)
    WHERE unique_key IS NOT NULL AND state NOT IN ('completed', 'dead', 'cancelled');
-- Jobs with a key that finished recently (enqueue --unique-for).
CREATE INDEX jobs_unique_key_updated ON jobs (unique_key, updated_at) WHERE unique_key IS NOT NULL;

-- A waiting job's dependencies (enqueue --after). The dependency is not a
-- foreign key: a completed dependency may be deleted by retention.
CREATE TABLE job_deps (
    job_id TEXT NOT NULL REFERENCES jobs (id) ON DELETE CASCADE,
    dep_id TEXT NOT NULL,
    PRIMARY KEY (job_id, dep_id)
) WITHOUT ROWID;
CREATE INDEX job_deps_dep ON job_deps (dep_id);

-- Hooks a queue block (or the defaults block) declares for its jobs.
ALTER TABLE queues ADD COLUMN hooks TEXT;
