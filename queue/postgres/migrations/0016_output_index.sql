-- Output pruning (PruneOutput) looks for attempts that ended before a time
-- and still hold output. attempts_finished held every attempt, so each
-- recorded attempt wrote an entry there, and each pruning pass read again
-- past every attempt it had already emptied (or that never printed
-- anything). Now only attempts holding output are in it: a silent job's
-- attempt writes no entry, and an emptied one leaves.
DROP INDEX attempts_finished;
CREATE INDEX attempts_output_finished ON attempts (finished_at) WHERE output IS NOT NULL;
