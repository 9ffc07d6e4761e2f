-- Finished attempts are counted once per statement, not once per row: a
-- batch of finishes is one INSERT into attempts (finish.go), and its rows
-- update each (queue, outcome, bucket) counter row once. Besides the
-- work, that leaves one dead counter row version per statement and group
-- instead of one per attempt.
DROP TRIGGER attempts_count ON attempts;
DROP FUNCTION count_attempt();

CREATE FUNCTION count_attempts() RETURNS trigger LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
BEGIN
    INSERT INTO attempt_totals AS t (queue, outcome, le_us, shard, n, sum_us)
    SELECT j.queue, a.outcome, a.le_us, pg_backend_pid(), count(*), sum(a.d)
    FROM (SELECT n.job_id, n.outcome, d.d, (SELECT min(le_us) FROM metric_buckets WHERE le_us >= d.d) AS le_us
          FROM new_attempts n,
          LATERAL (SELECT (extract(epoch FROM n.finished_at - coalesce(n.started_at, n.finished_at)) * 1000000)::bigint AS d) d) a
    JOIN jobs j ON j.id = a.job_id
    GROUP BY j.queue, a.outcome, a.le_us
    ON CONFLICT (queue, outcome, le_us, shard) DO UPDATE SET n = t.n + excluded.n, sum_us = t.sum_us + excluded.sum_us;
    RETURN NULL;
END $$;

CREATE TRIGGER attempts_count AFTER INSERT ON attempts REFERENCING NEW TABLE AS new_attempts
    FOR EACH STATEMENT EXECUTE FUNCTION count_attempts();
