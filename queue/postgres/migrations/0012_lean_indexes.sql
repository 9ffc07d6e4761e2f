-- Jobs kept lean. Every enqueue, claim and finish writes a new version of
-- the job's row, and each version gets an entry in every index whose
-- predicate it meets.

-- The retention index (finished jobs by update time) held an entry for
-- every version of every job, though retention only ever looks at
-- finished ones: now it holds those only, so an enqueue and a claim no
-- longer write to it.
DROP INDEX jobs_state_updated;
CREATE INDEX jobs_finished_updated ON jobs (updated_at) WHERE state IN ('completed', 'dead', 'cancelled');

-- Two dead versions per job pile up fast, at the front of the claim index
-- above all (the claimed jobs' pending versions), where every claim starts
-- reading. Autovacuum's default waits for a fifth of the table to be dead
-- before it vacuums, a tenth to be changed before it analyzes: on a table
-- of ten million finished jobs, two million dead versions. Jobs asks for
-- 2 % and 5 %. (A server without autovacuum gets the same from the
-- workers: Tidy, tidy.go.)
ALTER TABLE jobs SET (autovacuum_vacuum_scale_factor = 0.02, autovacuum_analyze_scale_factor = 0.05);
