-- Jobs by queue and state, counted as statements change them, so that
-- status, stats, queue list and /metrics read a few rows instead of
-- counting the jobs table (seconds on ten million jobs). One trigger per
-- statement (not per row) adds up what the statement inserted, deleted or
-- moved; an update that moves no job between states (a lease renewal, say)
-- writes nothing. As the monitoring totals (migration 3), each backend
-- counts into rows of its own (shard = its process id), so that workers
-- never wait on each other's counter rows; reads fold the rows no
-- transaction holds into shard 0.

-- No job changes while this counts them: the count and the triggers meet
-- exactly.
LOCK TABLE jobs IN SHARE ROW EXCLUSIVE MODE;

CREATE TABLE job_totals (
    queue text    COLLATE "C" NOT NULL,
    state text    COLLATE "C" NOT NULL,
    shard integer NOT NULL,
    n     bigint  NOT NULL,
    PRIMARY KEY (queue, state, shard)
);

INSERT INTO job_totals (queue, state, shard, n) SELECT queue, state, 0, count(*) FROM jobs GROUP BY queue, state;

-- Each branch names only the transition tables of its event.
CREATE FUNCTION count_jobs() RETURNS trigger LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        INSERT INTO job_totals AS t (queue, state, shard, n)
        SELECT queue, state, pg_backend_pid(), count(*) FROM new_jobs GROUP BY queue, state ORDER BY queue, state
        ON CONFLICT (queue, state, shard) DO UPDATE SET n = t.n + excluded.n;
    ELSIF TG_OP = 'DELETE' THEN
        INSERT INTO job_totals AS t (queue, state, shard, n)
        SELECT queue, state, pg_backend_pid(), -count(*) FROM old_jobs GROUP BY queue, state ORDER BY queue, state
        ON CONFLICT (queue, state, shard) DO UPDATE SET n = t.n + excluded.n;
    ELSE
        INSERT INTO job_totals AS t (queue, state, shard, n)
        SELECT queue, state, pg_backend_pid(), sum(n) FROM (
            SELECT queue, state, count(*) AS n FROM new_jobs GROUP BY queue, state
            UNION ALL
            SELECT queue, state, -count(*) FROM old_jobs GROUP BY queue, state) c
        GROUP BY queue, state HAVING sum(n) <> 0 ORDER BY queue, state
        ON CONFLICT (queue, state, shard) DO UPDATE SET n = t.n + excluded.n;
    END IF;
    RETURN NULL;
END $$;

CREATE TRIGGER jobs_count_insert AFTER INSERT ON jobs REFERENCING NEW TABLE AS new_jobs
    FOR EACH STATEMENT EXECUTE FUNCTION count_jobs();
CREATE TRIGGER jobs_count_update AFTER UPDATE ON jobs REFERENCING OLD TABLE AS old_jobs NEW TABLE AS new_jobs
    FOR EACH STATEMENT EXECUTE FUNCTION count_jobs();
CREATE TRIGGER jobs_count_delete AFTER DELETE ON jobs REFERENCING OLD TABLE AS old_jobs
    FOR EACH STATEMENT EXECUTE FUNCTION count_jobs();
