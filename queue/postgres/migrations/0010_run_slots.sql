-- Run-time histograms by time slot, for statistics (queuectl stats, the
-- dashboard's charts), which read a few thousand of these rows instead of
-- every attempt of their window. The statement that records finished
-- attempts counts them here too (count_attempts, below: one upsert per
-- statement); deleting a job takes its attempts out again (admin.go).

-- No attempt is recorded or deleted while this counts them: the backfill
-- and the new trigger meet exactly. (Jobs first, the order in which a
-- finish locks them.)
LOCK TABLE jobs, attempts IN SHARE ROW EXCLUSIVE MODE;

-- The run-time buckets' upper bounds in microseconds: each is the one
-- before plus a 32nd of it, from a millisecond to about four and a half
-- years, and then unbounded. queue.RunTimeBounds makes the same list.
CREATE TABLE run_buckets (le_us bigint PRIMARY KEY);
WITH RECURSIVE b(le) AS (SELECT 1000::bigint UNION ALL SELECT le + le / 32 FROM b WHERE le + le / 32 <= 140737488355328)
INSERT INTO run_buckets (le_us) SELECT le FROM b UNION ALL SELECT 9223372036854775807;

-- Finished attempts by slot of their end (a minute and an hour: each is
-- counted in both), queue, outcome class and run-time bucket, with the
-- least and greatest run time counted.
CREATE TABLE run_slots (
    span   text        COLLATE "C" NOT NULL, -- 'minute' or 'hour'
    slot   timestamptz NOT NULL,             -- its start
    queue  text        COLLATE "C" NOT NULL,
    class  text        COLLATE "C" NOT NULL, -- succeeded, interrupted, or failed (any other outcome)
    le_us  bigint      NOT NULL,             -- the run-time bucket (run_buckets)
    n      bigint      NOT NULL,
    min_us bigint      NOT NULL,
    max_us bigint      NOT NULL,
    PRIMARY KEY (span, slot, queue, class, le_us)
);

-- The attempts already stored: minutes from the attempts, hours from the
-- minutes.
INSERT INTO run_slots (span, slot, queue, class, le_us, n, min_us, max_us)
SELECT 'minute', a.slot, j.queue, a.class, (SELECT min(le_us) FROM run_buckets WHERE le_us >= a.d) AS le, count(*), min(a.d), max(a.d)
FROM (SELECT job_id, date_trunc('minute', finished_at AT TIME ZONE 'UTC') AT TIME ZONE 'UTC' AS slot,
        CASE WHEN outcome IN ('succeeded', 'interrupted') THEN outcome ELSE 'failed' END AS class,
        (extract(epoch FROM finished_at - coalesce(started_at, finished_at)) * 1000000)::bigint AS d
      FROM attempts) a
JOIN jobs j ON j.id = a.job_id
GROUP BY a.slot, j.queue, a.class, le;
INSERT INTO run_slots (span, slot, queue, class, le_us, n, min_us, max_us)
SELECT 'hour', date_trunc('hour', slot AT TIME ZONE 'UTC') AT TIME ZONE 'UTC' AS hour, queue, class, le_us, sum(n), min(min_us), max(max_us)
FROM run_slots WHERE span = 'minute' GROUP BY hour, queue, class, le_us;

-- The finished attempts of a statement, counted once per statement in the
-- monitoring totals (as migration 8) and in the run-time histograms, both
-- from one read of the statement's rows and their jobs. The histogram rows
-- are locked in key order, as a deletion locks them (admin.go).
CREATE OR REPLACE FUNCTION count_attempts() RETURNS trigger LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
BEGIN
    WITH a AS MATERIALIZED (
        SELECT j.queue, n.outcome, n.finished_at, d.d, (SELECT min(le_us) FROM metric_buckets WHERE le_us >= d.d) AS metric_le,
            (SELECT min(le_us) FROM run_buckets WHERE le_us >= d.d) AS run_le
        FROM new_attempts n
        JOIN jobs j ON j.id = n.job_id,
        LATERAL (SELECT (extract(epoch FROM n.finished_at - coalesce(n.started_at, n.finished_at)) * 1000000)::bigint AS d) d),
    totals AS (
        INSERT INTO attempt_totals AS t (queue, outcome, le_us, shard, n, sum_us)
        SELECT queue, outcome, metric_le, pg_backend_pid(), count(*), sum(d) FROM a GROUP BY queue, outcome, metric_le
        ON CONFLICT (queue, outcome, le_us, shard) DO UPDATE SET n = t.n + excluded.n, sum_us = t.sum_us + excluded.sum_us)
    INSERT INTO run_slots AS r (span, slot, queue, class, le_us, n, min_us, max_us)
    SELECT s.span, date_trunc(s.span, a.finished_at AT TIME ZONE 'UTC') AT TIME ZONE 'UTC', a.queue,
        CASE WHEN a.outcome IN ('succeeded', 'interrupted') THEN a.outcome ELSE 'failed' END, a.run_le, count(*), min(a.d), max(a.d)
    FROM a CROSS JOIN (VALUES ('minute'), ('hour')) s(span)
    GROUP BY 1, 2, 3, 4, 5 ORDER BY 1, 2, 3, 4, 5
    ON CONFLICT (span, slot, queue, class, le_us) DO UPDATE
        SET n = r.n + excluded.n, min_us = least(r.min_us, excluded.min_us), max_us = greatest(r.max_us, excluded.max_us);
    RETURN NULL;
END $$;

-- The slowest attempts of a window: the longest of each minute, read from
-- the end of its range of this index.
CREATE INDEX attempts_slowest ON attempts ((date_trunc('minute', finished_at AT TIME ZONE 'UTC')),
    ((extract(epoch FROM finished_at - coalesce(started_at, finished_at)) * 1000000)::bigint));
