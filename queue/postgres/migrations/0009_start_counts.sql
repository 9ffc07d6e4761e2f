-- Claims count their start delays themselves, one upsert per queue and
-- bucket for the whole claim (claim.go, claimUpdate), instead of a trigger
-- per claimed row: the trigger goes.
DROP TRIGGER jobs_count_start ON jobs;
DROP FUNCTION count_start();
