-- Finished jobs are listed newest first from an index per finished state,
-- keyed by created time and insertion order alone: the state, written into
-- every entry of jobs_finished_created (migration 17), took 16 of its
-- entries' 44 bytes. A listing names its states as literals (read.go,
-- listQuery), so the planner matches each branch with its state's index.
DROP INDEX jobs_finished_created;
CREATE INDEX jobs_completed_created ON jobs (created_at, seq) WHERE state = 'completed';
CREATE INDEX jobs_dead_created ON jobs (created_at, seq) WHERE state = 'dead';
CREATE INDEX jobs_cancelled_created ON jobs (created_at, seq) WHERE state = 'cancelled';
