-- A `queuectl run` service registers as a worker (it runs jobs), but it is
-- a long-running service with its own scheduler and HTTP server: `worker
-- stop` must leave it alone. Older rows are workers.
ALTER TABLE workers ADD COLUMN service INTEGER NOT NULL DEFAULT 0;
