-- Bulk imports (enqueue --file): their jobs are stored in chunks in state
-- 'staged', hidden from every reader, and made pending once the whole file
-- is stored (see bulk.go). An import whose process died is finished
-- (committed) or dropped by the next process.
ALTER TABLE jobs ADD COLUMN import_id TEXT;
CREATE INDEX jobs_staged ON jobs (import_id) WHERE state = 'staged';
CREATE TABLE imports (
    id        TEXT    PRIMARY KEY,
    committed INTEGER NOT NULL
);
