-- An attempt is found by its job (history, output) and listed in the order
-- it was written: the key (job_id, seq). The primary key on seq alone, an
-- index every recorded attempt wrote, only output pruning read; it now finds
-- what it empties by the new key.
ALTER TABLE attempts DROP CONSTRAINT attempts_pkey;
DROP INDEX attempts_job;
ALTER TABLE attempts ADD PRIMARY KEY (job_id, seq);
