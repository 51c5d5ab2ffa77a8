-- TokenVault schema for PostgreSQL, version 1: the same tables as the embedded SQLite schema at
-- its version 3 (times are Unix milliseconds, JSON columns are text), so rows move between the
-- backends as they are (`tokenvault migrate-store`). Numbered apart from the SQLite files.

CREATE TABLE vault_meta (
    key   TEXT PRIMARY KEY NOT NULL,
    value TEXT NOT NULL
);

CREATE TABLE key_terms (
    term        BIGINT PRIMARY KEY NOT NULL CHECK (term > 0),
    wrapped_key BYTEA NOT NULL CHECK (length(wrapped_key) > 0),
    state       TEXT NOT NULL CHECK (state IN ('active', 'retired')),
    created_at  BIGINT NOT NULL
);
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
    generation               BIGINT NOT NULL CHECK (generation >= 1),
    token_type               TEXT,
    scopes                   TEXT NOT NULL DEFAULT '[]' CHECK (json_typeof(scopes::json) = 'array'),
    labels                   TEXT NOT NULL DEFAULT '{}' CHECK (json_typeof(labels::json) = 'object'),
    issued_at                BIGINT NOT NULL,
    expires_at               BIGINT,
    refresh_at               BIGINT,
    refresh_token_expires_at BIGINT,
    last_error_code          TEXT,
    last_error_message       TEXT,
    last_error_at            BIGINT,
    created_at               BIGINT NOT NULL,
    updated_at               BIGINT NOT NULL,
    refresh_failures         BIGINT NOT NULL DEFAULT 0 CHECK (refresh_failures >= 0),
    -- Every sealed field of a row is sealed under this term; the foreign key keeps a term from
    -- being dropped while any row still needs it.
    seal_term                BIGINT NOT NULL REFERENCES key_terms(term),
    access_token             BYTEA NOT NULL,
    refresh_token            BYTEA,
    id_token                 BYTEA,
    extras                   BYTEA,
    CHECK (id = namespace || '/' || name),
    CHECK (kind = 'oauth2' OR refresh_token IS NULL)
);
CREATE INDEX credentials_refresh_due ON credentials(refresh_at) WHERE refresh_at IS NOT NULL;
CREATE INDEX credentials_seal_term ON credentials(seal_term);
CREATE INDEX credentials_namespace ON credentials(namespace, id);

CREATE TABLE refresh_attempts (
    attempt_id                TEXT PRIMARY KEY NOT NULL,
    credential_id             TEXT NOT NULL REFERENCES credentials(id) ON DELETE CASCADE,
    generation                BIGINT NOT NULL CHECK (generation >= 1),
    refresh_token_fingerprint TEXT NOT NULL,
    lease_owner               TEXT NOT NULL,
    lease_expires_at          BIGINT NOT NULL,
    state                     TEXT NOT NULL CHECK (state IN ('open', 'succeeded', 'failed', 'abandoned')),
    outcome                   TEXT,
    started_at                BIGINT NOT NULL,
    finished_at               BIGINT,
    CHECK ((state = 'open') = (finished_at IS NULL))
);
-- One open attempt per credential: on several nodes, the second to journal one gets a unique
-- violation, which the ledger reads as "another process holds the lease".
CREATE UNIQUE INDEX refresh_attempts_one_open ON refresh_attempts(credential_id) WHERE state = 'open';
CREATE INDEX refresh_attempts_finished ON refresh_attempts(finished_at) WHERE finished_at IS NOT NULL;

-- Ids are given by the ledger, which chains each row to the one before it.
CREATE TABLE audit_events (
    id            BIGINT PRIMARY KEY NOT NULL,
    at            BIGINT NOT NULL,
    actor_uid     BIGINT,
    actor_gid     BIGINT,
    actor_pid     BIGINT,
    operation     TEXT NOT NULL CHECK (length(operation) > 0),
    credential_id TEXT,
    outcome       TEXT NOT NULL CHECK (outcome IN ('allowed', 'denied', 'succeeded', 'failed')),
    detail        TEXT,
    count         BIGINT NOT NULL DEFAULT 1 CHECK (count >= 1),
    last_at       BIGINT,
    mac           BYTEA
);
CREATE INDEX audit_events_at ON audit_events(at);
CREATE INDEX audit_events_credential ON audit_events(credential_id, id);

CREATE TABLE audit_chain (
    name   TEXT PRIMARY KEY NOT NULL CHECK (name IN ('anchor', 'head')),
    row_id BIGINT NOT NULL,
    mac    BYTEA NOT NULL,
    seal   BYTEA NOT NULL
);

-- Every change to a credential row, for the other nodes: which row, its generation and status
-- before and after, whether a failure was recorded, and the node that made it (the writer's
-- `tokenvault.node` setting). Never a secret. Each change is NOTIFYed with all of that as its
-- payload (delivered at commit, in commit order) and kept in `credential_changes`, which a node
-- that lost its connection replays from the moment it lost it. Pruned after a while by any node.
CREATE TABLE credential_changes (
    seq            BIGSERIAL PRIMARY KEY,
    op             TEXT NOT NULL CHECK (op IN ('insert', 'update', 'delete')),
    credential_id  TEXT NOT NULL,
    old_generation BIGINT,
    new_generation BIGINT,
    old_status     TEXT,
    new_status     TEXT,
    failed         BOOLEAN NOT NULL DEFAULT false,
    node           TEXT,
    at             BIGINT NOT NULL
);
CREATE INDEX credential_changes_at ON credential_changes(at);

CREATE FUNCTION tokenvault_record_change() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    change credential_changes%ROWTYPE;
BEGIN
    change.at := (extract(epoch FROM clock_timestamp()) * 1000)::BIGINT;
    change.node := current_setting('tokenvault.node', true);
    change.failed := false;
    IF TG_OP = 'DELETE' THEN
        change.op := 'delete';
        change.credential_id := OLD.id;
        change.old_generation := OLD.generation;
        change.old_status := OLD.status;
    ELSIF TG_OP = 'INSERT' THEN
        change.op := 'insert';
        change.credential_id := NEW.id;
        change.new_generation := NEW.generation;
        change.new_status := NEW.status;
    ELSE
        change.op := 'update';
        change.credential_id := NEW.id;
        change.old_generation := OLD.generation;
        change.new_generation := NEW.generation;
        change.old_status := OLD.status;
        change.new_status := NEW.status;
        change.failed := NEW.last_error_at IS DISTINCT FROM OLD.last_error_at AND NEW.last_error_at IS NOT NULL;
    END IF;
    INSERT INTO credential_changes (op, credential_id, old_generation, new_generation, old_status, new_status, failed, node, at)
    VALUES (change.op, change.credential_id, change.old_generation, change.new_generation, change.old_status,
            change.new_status, change.failed, change.node, change.at)
    RETURNING seq INTO change.seq;
    PERFORM pg_notify('tokenvault_changes', concat_ws('|', change.seq, change.op,
        coalesce(change.old_generation::TEXT, ''), coalesce(change.new_generation::TEXT, ''),
        coalesce(change.old_status, ''), coalesce(change.new_status, ''), change.failed::TEXT,
        coalesce(change.node, ''), change.credential_id));
    RETURN NULL;
END
$$;
CREATE TRIGGER credentials_record_change AFTER INSERT OR UPDATE OR DELETE ON credentials
    FOR EACH ROW EXECUTE FUNCTION tokenvault_record_change();
