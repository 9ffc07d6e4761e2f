-- Shaping jobs: labels, unique keys, hooks and dependencies.

-- A job waiting for others to complete (enqueue --after) is 'waiting'.
ALTER TABLE jobs DROP CONSTRAINT jobs_state_check;
ALTER TABLE jobs ADD CONSTRAINT jobs_state_check
    CHECK (state IN ('waiting', 'pending', 'processing', 'completed', 'failed', 'dead', 'cancelled'));

-- Labels (an object of strings) and the outcome hooks copied onto the job
-- at enqueue (on_success, on_failure, on_dead).
ALTER TABLE jobs ADD COLUMN labels jsonb;
ALTER TABLE jobs ADD COLUMN hooks jsonb;

-- At most one unfinished job per unique key: the constraint, not a read,
-- decides between enqueuers that race.
ALTER TABLE jobs ADD COLUMN unique_key text COLLATE "C";
CREATE UNIQUE INDEX jobs_unique_key ON jobs (unique_key)
    WHERE unique_key IS NOT NULL AND state NOT IN ('completed', 'dead', 'cancelled');
-- Jobs with a key that finished recently (enqueue --unique-for).
CREATE INDEX jobs_unique_key_updated ON jobs (unique_key, updated_at) WHERE unique_key IS NOT NULL;

-- A waiting job's dependencies. The dependency is not a foreign key: a
-- completed dependency may be deleted by retention.
CREATE TABLE job_deps (
    job_id text COLLATE "C" NOT NULL REFERENCES jobs (id) ON DELETE CASCADE,
    dep_id text COLLATE "C" NOT NULL,
    PRIMARY KEY (job_id, dep_id)
);
CREATE INDEX job_deps_dep ON job_deps (dep_id);

-- Hooks a queue block (or the defaults block) declares for its jobs.
ALTER TABLE queues ADD COLUMN hooks jsonb;
