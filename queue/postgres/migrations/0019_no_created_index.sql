-- Listing every job newest first (list, the dashboard) merges the listing
-- indexes of migration 17, one branch per state, each read newest first
-- (read.go, listQuery). jobs_created ordered every job by creation time and
-- took an entry for every version of every job: each enqueue, claim and
-- finish wrote one, and its pages ended half full, 61 MiB per million
-- finished jobs. It goes.
DROP INDEX jobs_created;
