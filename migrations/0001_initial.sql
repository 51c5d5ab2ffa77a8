-- TokenVault schema, version 1.
-- Shipped migrations are never edited: start-up refuses a database whose recorded checksum
-- differs from the embedded file. Change the schema with a new NNNN_name.sql file.
-- Times are Unix epoch milliseconds (INTEGER). Secrets are sealed envelopes (BLOB):
-- version | term | nonce | ciphertext, opened only by TokenVaultCrypto.

-- Plain settings of the vault (key source, KDF salt and limits). Never secret.
CREATE TABLE vault_meta (
    key   TEXT PRIMARY KEY NOT NULL,
    value TEXT NOT NULL
) STRICT;

-- Data keys ("terms"), each wrapped by the master key. Exactly one is active for new writes.
CREATE TABLE key_terms (
    term        INTEGER PRIMARY KEY NOT NULL CHECK (term > 0),
    wrapped_key BLOB NOT NULL CHECK (length(wrapped_key) > 0),
    state       TEXT NOT NULL CHECK (state IN ('active', 'retired')),
    created_at  INTEGER NOT NULL
) STRICT;
CREATE UNIQUE INDEX key_terms_one_active ON key_terms(state) WHERE state = 'active';

CREATE TABLE credentials (
    id                       TEXT PRIMARY KEY NOT NULL,
    namespace                TEXT NOT NULL CHECK (length(namespace) BETWEEN 1 AND 64),
    name                     TEXT NOT NULL CHECK (length(name) BETWEEN 1 AND 128),
    provider                 TEXT NOT NULL CHECK (length(provider) BETWEEN 1 AND 64),
    kind                     TEXT NOT NULL CHECK (kind IN ('oauth2', 'verify_token')),
    subject                  TEXT,
    status                   TEXT NOT NULL
                             CHECK (status IN ('active', 'failing', 'needs_reauth', 'revoke_pending', 'expired')),
    generation               INTEGER NOT NULL CHECK (generation >= 1),
    token_type               TEXT,
    scopes                   TEXT NOT NULL DEFAULT '[]' CHECK (json_valid(scopes) AND json_type(scopes) = 'array'),
    labels                   TEXT NOT NULL DEFAULT '{}' CHECK (json_valid(labels) AND json_type(labels) = 'object'),
    issued_at                INTEGER NOT NULL,
    expires_at               INTEGER,
    refresh_at               INTEGER,
    refresh_token_expires_at INTEGER,
    last_error_code          TEXT,
    last_error_message       TEXT,
    last_error_at            INTEGER,
    created_at               INTEGER NOT NULL,
    updated_at               INTEGER NOT NULL,
    -- Every sealed field of a row is sealed under this term; the foreign key keeps a term
    -- from being dropped while any row still needs it.
    seal_term                INTEGER NOT NULL REFERENCES key_terms(term),
    access_token             BLOB NOT NULL,
    refresh_token            BLOB,
    id_token                 BLOB,
    extras                   BLOB,
    CHECK (id = namespace || '/' || name),
    CHECK (kind = 'oauth2' OR refresh_token IS NULL)
) STRICT;
-- The refresh scheduler reads the earliest refresh_at through this index; no full scans.
CREATE INDEX credentials_refresh_due ON credentials(refresh_at) WHERE refresh_at IS NOT NULL;
CREATE INDEX credentials_seal_term ON credentials(seal_term);
CREATE INDEX credentials_namespace ON credentials(namespace, id);

-- Refresh journal: an attempt is written (durably) before the provider is called, and
-- closed in the same transaction that stores the new tokens. The lease keeps a second
-- process off the same credential.
CREATE TABLE refresh_attempts (
    attempt_id                TEXT PRIMARY KEY NOT NULL,
    credential_id             TEXT NOT NULL REFERENCES credentials(id) ON DELETE CASCADE,
    generation                INTEGER NOT NULL CHECK (generation >= 1),
    refresh_token_fingerprint TEXT NOT NULL,
    lease_owner               TEXT NOT NULL,
    lease_expires_at          INTEGER NOT NULL,
    state                     TEXT NOT NULL CHECK (state IN ('open', 'succeeded', 'failed', 'abandoned')),
    outcome                   TEXT,
    started_at                INTEGER NOT NULL,
    finished_at               INTEGER,
    CHECK ((state = 'open') = (finished_at IS NULL))
) STRICT;
CREATE UNIQUE INDEX refresh_attempts_one_open ON refresh_attempts(credential_id) WHERE state = 'open';

-- Who did what to which credential. Never a token value. Outlives the credential it names.
CREATE TABLE audit_events (
    id            INTEGER PRIMARY KEY AUTOINCREMENT,
    at            INTEGER NOT NULL,
    actor_uid     INTEGER,
    actor_gid     INTEGER,
    actor_pid     INTEGER,
    operation     TEXT NOT NULL CHECK (length(operation) > 0),
    credential_id TEXT,
    outcome       TEXT NOT NULL CHECK (outcome IN ('allowed', 'denied', 'succeeded', 'failed')),
    detail        TEXT
) STRICT;
CREATE INDEX audit_events_at ON audit_events(at);
