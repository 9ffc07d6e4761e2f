-- The statements that insert jobs count them themselves (counts.go,
-- countedInsert and addJobCounts), as the statements that move jobs between
-- states have since migration 14. The statement trigger of migration 11
-- gathered the inserted rows into a transition table and ran a plpgsql
-- function over them: on a new connection (every `queuectl enqueue` call)
-- compiling that function and setting up the transition table took half
-- of the first insert (6.8 ms with it, 3.4 without). Deletes keep their
-- trigger.
DROP TRIGGER jobs_count_insert ON jobs;
