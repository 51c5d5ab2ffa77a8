-- TokenVault schema, version 4: leases kept alive by their owner's heartbeat (issue 22).

-- One row per node (a data directory: its identity is random, created once, in `node.id`).
-- A node raises `beat` every few seconds; every refresh attempt it journals is leased to it by
-- name (`<node>/<incarnation>`), so one statement renews all of them. Another node takes an
-- attempt over only after watching `beat` stand still for a whole lease period. Times are the
-- database's (on SQLite, this host's: one host owns the file). Not copied by migrate-store.
CREATE TABLE nodes (
    node        TEXT PRIMARY KEY NOT NULL CHECK (length(node) BETWEEN 1 AND 128),
    incarnation TEXT NOT NULL,
    beat        INTEGER NOT NULL CHECK (beat >= 1),
    beat_at     INTEGER NOT NULL,
    started_at  INTEGER NOT NULL,
    host        TEXT NOT NULL,
    pid         INTEGER NOT NULL
) STRICT;
-- Open attempts by owner, for `tokenvault nodes forget` (and the list's counts).
CREATE INDEX refresh_attempts_open_owner ON refresh_attempts(lease_owner) WHERE state = 'open';

-- Provider answers stored, by the courier's call key (`exchange:<id>`), written in the
-- transaction that stores them: an answer the spool hands back after it was stored (the daemon
-- died before the courier heard it was safe) is recognised and not applied again, which would
-- roll the credential back to older tokens. Pruned after 30 days.
CREATE TABLE received_answers (
    call_key      TEXT PRIMARY KEY NOT NULL,
    credential_id TEXT NOT NULL,
    stored_at     INTEGER NOT NULL
) STRICT;
CREATE INDEX received_answers_stored ON received_answers(stored_at);
