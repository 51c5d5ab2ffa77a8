-- TokenVault schema, version 8: sign-ins the vault started and has not finished.
--
-- One row per pending sign-in, found by the fingerprint of its `state` (the state itself is
-- never stored: a row read from the database cannot be finished without it). The PKCE verifier
-- and the rest of the request (redirect URI, scopes, nonce, labels) are sealed like credential
-- fields, bound to the row's key and credential. A row is deleted when its sign-in finishes,
-- whatever the outcome (a state is used once), and expired rows are pruned when a sign-in
-- starts. `uid` is the caller who started it: it alone may finish it, and the number of rows
-- per uid is capped. Times are Unix milliseconds. Not copied by migrate-store.
CREATE TABLE authorizations (
    state_key     TEXT PRIMARY KEY,
    credential_id TEXT NOT NULL,
    provider      TEXT NOT NULL,
    uid           INTEGER,
    created_at    INTEGER NOT NULL,
    expires_at    INTEGER NOT NULL,
    verifier      BLOB NOT NULL,
    details       BLOB NOT NULL
) WITHOUT ROWID;
CREATE INDEX authorizations_expiry ON authorizations(expires_at);
CREATE INDEX authorizations_caller ON authorizations(uid);
