-- A job of an import decided cancelled as it is staged (a job it runs
-- after ended dead or was cancelled) carries its reason in error while it
-- waits, staged, for the import's commit. It holds its unique key no more
-- than a job cancelled at enqueue does: a later job of the same import with
-- that key is added, as enqueueing the file's jobs one at a time would add
-- it. Publishing makes it cancelled, never waiting, so it never enters the
-- index.
DROP INDEX jobs_unique_key;
CREATE UNIQUE INDEX jobs_unique_key ON jobs (unique_key)
    WHERE unique_key IS NOT NULL AND state NOT IN ('completed', 'dead', 'cancelled')
        AND NOT (state = 'staged' AND error IS NOT NULL);
