-- TokenVault schema, version 8: sign-ins the vault started and has not finished.
--
-- One row per pending sign-in, found by `state_key`, a fingerprint of its `state` (the state
-- itself is never stored: a row read from the database cannot be finished without it). `secret`
-- (the PKCE verifier of an authorization code sign-in, the device code of a device grant) and
-- `details` (redirect URI, scopes, nonce, labels) are sealed like credential fields, under
-- `seal_term`, bound to the row's key, credential, provider, uid and expiry. A row is deleted
-- when its sign-in finishes, whatever the outcome (a state is used once); expired rows are pruned
-- when a sign-in starts. `uid` is the caller who started it: it alone may finish it, and the rows
-- per uid are capped. A device grant (RFC 8628) is polled by one node at a time: `next_poll_at`
-- and `poll_interval` (which `slow_down` raises) say when, `claim` and `claimed_until` who.
-- Times are Unix milliseconds. Not copied by migrate-store.
CREATE TABLE authorizations (
    state_key     TEXT PRIMARY KEY,
    kind          TEXT NOT NULL CHECK (kind IN ('authorization_code', 'device_code')),
    credential_id TEXT NOT NULL,
    provider      TEXT NOT NULL,
    uid           INTEGER NOT NULL,
    created_at    INTEGER NOT NULL,
    expires_at    INTEGER NOT NULL,
    seal_term     INTEGER NOT NULL REFERENCES key_terms(term),
    secret        BLOB NOT NULL,
    details       BLOB NOT NULL,
    poll_interval INTEGER,
    next_poll_at  INTEGER,
    claim         TEXT,
    claimed_until INTEGER
) STRICT, WITHOUT ROWID;
CREATE INDEX authorizations_expiry ON authorizations(expires_at);
CREATE INDEX authorizations_caller ON authorizations(uid);
-- A key term stays while a pending sign-in is sealed under it (rotation keeps it).
CREATE INDEX authorizations_seal_term ON authorizations(seal_term);
CREATE INDEX authorizations_due ON authorizations(next_poll_at) WHERE kind = 'device_code';
