-- Browser sessions of the dashboard signed out before they expired: every
-- process serving the dashboard reads the rows numbered after the last it
-- saw and refuses those sessions' cookies (web). Writes take turns, so
-- numbers grow in commit order; AUTOINCREMENT never gives a number again
-- once its row is deleted (a plain rowid would reuse the largest), so a
-- reader past it misses no newer row. A sign-out deletes the rows of
-- sessions that have expired: the table holds only recent sign-outs.
CREATE TABLE session_revocations (
    seq        INTEGER PRIMARY KEY AUTOINCREMENT,
    nonce      BLOB    NOT NULL UNIQUE,
    expires_at INTEGER NOT NULL -- Unix microseconds
);
