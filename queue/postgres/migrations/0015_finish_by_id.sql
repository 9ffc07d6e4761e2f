-- A batch of outcomes finds each job by its id and its worker. The planner
-- joins the batch to jobs through jobs_processing_worker (the processing
-- set only: smaller than the primary key), and with the worker alone as
-- its key each outcome read every job its worker held: a batch of n
-- outcomes read about n²/2 rows, a third of the finish statement's time
-- at 64 slots. With the id in the key each outcome reads its own job. The
-- worker list and the rescuer still find a worker's jobs by the key's
-- first column.
DROP INDEX jobs_processing_worker;
CREATE INDEX jobs_processing_worker ON jobs (worker, id) WHERE state = 'processing';
