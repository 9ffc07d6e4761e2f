-- The statements that move jobs between states count the moves themselves
-- (counts.go, countMoves), as part of the same statement: the claim, the
-- finish, a retry, a cancel, a dependency's release or cancel. The
-- statement trigger that did it gathered every updated row, old and new,
-- into two transition tables, for every UPDATE of jobs, lease renewals
-- included. Inserts and deletes keep their triggers (migration 11).
DROP TRIGGER jobs_count_update ON jobs;
