-- Leases kept alive by their owner's heartbeat (issue 22), as SQLite's version 4.
--
-- One row per node (a data directory: its identity is random, created once, in `node.id`).
-- A node raises `beat` every few seconds, in one statement that also reads every other node's
-- row; every refresh attempt it journals is leased to it by name (`<node>/<incarnation>`), so
-- that statement renews all of them. Another node takes an attempt over only after watching
-- `beat` stand still for a whole lease period while connected, and only if the counter still
-- has that value inside the transaction that takes it. Times are the database's
-- (`clock_timestamp()`), never a node's. Not copied by migrate-store (nodes register anew).
CREATE TABLE nodes (
    node        TEXT PRIMARY KEY NOT NULL CHECK (length(node) BETWEEN 1 AND 128),
    incarnation TEXT NOT NULL,
    beat        BIGINT NOT NULL CHECK (beat >= 1),
    beat_at     BIGINT NOT NULL,
    started_at  BIGINT NOT NULL,
    host        TEXT NOT NULL,
    pid         BIGINT NOT NULL
);
-- Open attempts by owner, for `tokenvault nodes forget` (and the list's counts).
CREATE INDEX refresh_attempts_open_owner ON refresh_attempts(lease_owner) WHERE state = 'open';

-- Provider answers stored, by the courier's call key (`exchange:<id>`), written in the
-- transaction that stores them: an answer the spool hands back after it was stored (the daemon
-- died before the courier heard it was safe) is recognised and not applied again, which would
-- roll the credential back to older tokens. Pruned after 30 days.
CREATE TABLE received_answers (
    call_key      TEXT PRIMARY KEY NOT NULL,
    credential_id TEXT NOT NULL,
    stored_at     BIGINT NOT NULL
);
CREATE INDEX received_answers_stored ON received_answers(stored_at);
