-- Every enqueued job wrote seven index entries, and a batch enqueue's COPY
-- spent three quarters of its time in them (a table with its primary key
-- alone took 0.35 of the time). Two of them go, and one replaces two:
--
-- jobs_next_run (run_at) served one question, the earliest run_at among
-- runnable jobs, which an idle worker asks. jobs_pending_run_at (queue,
-- run_at) served the oldest pending job per queue and the scheduled counts.
-- One index of the runnable jobs (pending and failed) by queue and run_at
-- answers all three: the earliest run time is now the least of each
-- runnable queue's first entry, found by a skip scan (claim.go,
-- NextRunAt), one index probe per queue.
--
-- jobs_queue_state (queue, state) took an entry for every version of every
-- job: at enqueue, at claim, at finish. Open jobs by queue are found
-- through the claim index (pending, failed) or the small processing set;
-- only finished jobs need it (list --queue, dlq --queue), so it keeps
-- their entries alone.
DROP INDEX jobs_next_run;
DROP INDEX jobs_pending_run_at;
DROP INDEX jobs_queue_state;
CREATE INDEX jobs_runnable_at ON jobs (queue, run_at) WHERE state IN ('pending', 'failed');
CREATE INDEX jobs_queue_finished ON jobs (queue, state) WHERE state IN ('completed', 'dead', 'cancelled');
