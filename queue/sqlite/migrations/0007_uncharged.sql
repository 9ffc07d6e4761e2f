-- Attempts a job made that are not charged against its max_retries: those a
-- worker's shutdown interrupted. Attempt numbers (attempts) are never taken
-- back, so each attempt of a job has a number of its own.
ALTER TABLE jobs ADD COLUMN uncharged INTEGER NOT NULL DEFAULT 0;
