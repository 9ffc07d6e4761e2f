-- The statements that insert jobs count them themselves (counts.go,
-- countInserted and addJobCounts), as the statements that move jobs between
-- states have since migration 14. The statement trigger of migration 11
-- gathered the inserted rows into a transition table and ran a plpgsql
-- function over them: on a new connection (every `queuectl enqueue` call)
-- compiling that function and setting up the transition table took about
-- 3 of the 7 ms of the first insert. Deletes keep their trigger.
DROP TRIGGER jobs_count_insert ON jobs;
