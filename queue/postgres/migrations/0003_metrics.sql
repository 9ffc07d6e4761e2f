-- Figures for monitoring, kept by the database as attempts start and
-- finish, so that they count the work of every process and host and a
-- scrape reads a few small tables instead of scanning jobs and attempts.
--
-- Each backend counts into rows of its own (shard = its process id), so
-- finishing and claiming transactions never wait on each other's counter
-- rows; a scrape folds the rows no transaction holds into shard 0.

-- Histogram bucket upper bounds in microseconds; the last is unbounded.
CREATE TABLE metric_buckets (le_us bigint PRIMARY KEY);
INSERT INTO metric_buckets (le_us) VALUES (5000), (10000), (25000), (50000), (100000), (250000),
    (500000), (1000000), (2500000), (5000000), (10000000), (30000000), (60000000), (120000000),
    (300000000), (600000000), (1800000000), (3600000000), (9223372036854775807);

-- Finished attempts by queue, outcome and run time bucket.
CREATE TABLE attempt_totals (
    queue   text    COLLATE "C" NOT NULL,
    outcome text    COLLATE "C" NOT NULL,
    le_us   bigint  NOT NULL,
    shard   integer NOT NULL,
    n       bigint  NOT NULL,
    sum_us  bigint  NOT NULL,
    PRIMARY KEY (queue, outcome, le_us, shard)
);

CREATE FUNCTION count_attempt() RETURNS trigger LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
DECLARE
    d bigint := (extract(epoch FROM NEW.finished_at - coalesce(NEW.started_at, NEW.finished_at)) * 1000000)::bigint;
BEGIN
    INSERT INTO attempt_totals AS t (queue, outcome, le_us, shard, n, sum_us)
    VALUES ((SELECT queue FROM jobs WHERE id = NEW.job_id), NEW.outcome,
        (SELECT min(le_us) FROM metric_buckets WHERE le_us >= d), pg_backend_pid(), 1, d)
    ON CONFLICT (queue, outcome, le_us, shard) DO UPDATE SET n = t.n + 1, sum_us = t.sum_us + excluded.sum_us;
    RETURN NULL;
END $$;

CREATE TRIGGER attempts_count AFTER INSERT ON attempts FOR EACH ROW EXECUTE FUNCTION count_attempt();

-- Claimed jobs by queue and the delay from run_at (when the job became due)
-- to the start of the attempt.
CREATE TABLE start_delay_totals (
    queue  text    COLLATE "C" NOT NULL,
    le_us  bigint  NOT NULL,
    shard  integer NOT NULL,
    n      bigint  NOT NULL,
    sum_us bigint  NOT NULL,
    PRIMARY KEY (queue, le_us, shard)
);

CREATE FUNCTION count_start() RETURNS trigger LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
DECLARE
    d bigint := greatest(0, (extract(epoch FROM NEW.started_at - OLD.run_at) * 1000000)::bigint);
BEGIN
    INSERT INTO start_delay_totals AS t (queue, le_us, shard, n, sum_us)
    VALUES (NEW.queue, (SELECT min(le_us) FROM metric_buckets WHERE le_us >= d), pg_backend_pid(), 1, d)
    ON CONFLICT (queue, le_us, shard) DO UPDATE SET n = t.n + 1, sum_us = t.sum_us + excluded.sum_us;
    RETURN NULL;
END $$;

CREATE TRIGGER jobs_count_start AFTER UPDATE OF state ON jobs FOR EACH ROW
    WHEN (NEW.state = 'processing' AND OLD.state <> 'processing') EXECUTE FUNCTION count_start();

-- The age of each queue's oldest due job: one index seek per queue.
CREATE INDEX jobs_pending_run_at ON jobs (queue, run_at) WHERE state = 'pending';
