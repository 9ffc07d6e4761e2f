-- Browser sessions of the dashboard signed out before they expired: every
-- process serving the dashboard reads the rows numbered after the last it
-- saw and refuses those sessions' cookies (web). A sign-out locks the table
-- against other sign-outs until it commits (sessions.go), so numbers grow
-- in commit order and a reader past a number misses no row committed
-- before it. A sign-out deletes the rows of sessions that have expired:
-- the table holds only recent sign-outs.
CREATE TABLE session_revocations (
    seq        bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    nonce      bytea       NOT NULL UNIQUE,
    expires_at timestamptz NOT NULL
);
