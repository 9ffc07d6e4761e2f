-- An attempt is found by its job (history, output) and listed in the order
-- it was written: the key (job_id, seq). The primary key on seq alone was an
-- index no statement read that every recorded attempt wrote.
ALTER TABLE attempts DROP CONSTRAINT attempts_pkey;
DROP INDEX attempts_job;
ALTER TABLE attempts ADD PRIMARY KEY (job_id, seq);
