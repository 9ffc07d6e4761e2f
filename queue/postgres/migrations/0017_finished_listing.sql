-- Listing by state (list --state, newest first) reads one of two indexes:
-- finished jobs in one, the others in the other. jobs_state_created held
-- every version of every job, so each claim and finish wrote a new entry
-- into the middle of it, and pages split half full; vacuum then emptied the
-- pending and processing ranges again. Finished jobs, most of the table,
-- are now written once, into an index that never sees the churn of running
-- ones.
DROP INDEX jobs_state_created;
CREATE INDEX jobs_finished_created ON jobs (state, created_at, seq)
    WHERE state IN ('completed', 'dead', 'cancelled');
CREATE INDEX jobs_open_created ON jobs (state, created_at, seq)
    WHERE state IN ('waiting', 'pending', 'processing', 'failed');
