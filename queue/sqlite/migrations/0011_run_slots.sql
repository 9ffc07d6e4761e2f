-- Run-time histograms by time slot, for statistics (queuectl stats, the
-- dashboard's charts), which read a few thousand of these rows instead of
-- every attempt of their window. The write transactions keep them as they
-- finish attempts (counts.go); deleting a job takes its attempts out again
-- (admin.go).

-- The run-time buckets' upper bounds in microseconds: each is the one
-- before plus a 32nd of it, from a millisecond to about four and a half
-- years, and then unbounded. queue.RunTimeBounds makes the same list.
CREATE TABLE run_buckets (le_us INTEGER PRIMARY KEY);
WITH RECURSIVE b(le) AS (SELECT 1000 UNION ALL SELECT le + le / 32 FROM b WHERE le + le / 32 <= 140737488355328)
INSERT INTO run_buckets (le_us) SELECT le FROM b UNION ALL SELECT 9223372036854775807;

-- Finished attempts by slot of their end (a minute and an hour: each is
-- counted in both), queue, outcome class and run-time bucket, with the
-- least and greatest run time counted.
CREATE TABLE run_slots (
    span   INTEGER NOT NULL, -- the slot's length in microseconds
    slot   INTEGER NOT NULL, -- its start
    queue  TEXT    NOT NULL,
    class  TEXT    NOT NULL, -- succeeded, interrupted, or failed (any other outcome)
    le_us  INTEGER NOT NULL, -- the run-time bucket (run_buckets)
    n      INTEGER NOT NULL,
    min_us INTEGER NOT NULL,
    max_us INTEGER NOT NULL,
    PRIMARY KEY (span, slot, queue, class, le_us)
) WITHOUT ROWID;

-- The attempts already stored: minutes from the attempts, hours from the
-- minutes.
INSERT INTO run_slots (span, slot, queue, class, le_us, n, min_us, max_us)
SELECT 60000000, slot, queue, class, (SELECT min(le_us) FROM run_buckets WHERE le_us >= d) AS le, count(*), min(d), max(d)
FROM (SELECT a.finished_at - a.finished_at % 60000000 AS slot, j.queue AS queue,
        CASE WHEN a.outcome IN ('succeeded', 'interrupted') THEN a.outcome ELSE 'failed' END AS class,
        a.finished_at - coalesce(a.started_at, a.finished_at) AS d
      FROM attempts a JOIN jobs j ON j.id = a.job_id)
GROUP BY slot, queue, class, le;
INSERT INTO run_slots (span, slot, queue, class, le_us, n, min_us, max_us)
SELECT 3600000000, slot - slot % 3600000000 AS hour, queue, class, le_us, sum(n), min(min_us), max(max_us)
FROM run_slots WHERE span = 60000000 GROUP BY hour, queue, class, le_us;

-- The slowest attempts of a window: the longest of each minute, read
-- from the end of its range of this index.
CREATE INDEX attempts_slowest ON attempts (finished_at / 60000000, finished_at - coalesce(started_at, finished_at));
