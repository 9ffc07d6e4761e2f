-- A `queuectl run` service registers as a worker (it runs jobs), but it is
-- a long-running service with its own scheduler and HTTP server: `worker
-- stop` must leave it alone. Older rows are workers. (Adding a column with
-- a constant default rewrites nothing.)
ALTER TABLE workers ADD COLUMN service boolean NOT NULL DEFAULT false;
