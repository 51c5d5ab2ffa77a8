-- The webhook outbox (issue 26), as SQLite's version 6.
--
-- One row per event and endpoint, written in the transaction of the change that causes the
-- event, so a crash between the change and its delivery loses nothing. A row goes once the
-- endpoint took it; after the retry period it stays as `failed` until an operator redelivers
-- it. `delayed` rows (a `refresh_failing`, due only if the failure lasts) are dropped when
-- anything else is announced about their credential first. One node delivers each row: it
-- claims it (`FOR UPDATE SKIP LOCKED`) until `claimed_until`, and its outcome counts only while
-- the row still carries its claim. Times are the database's (`clock_timestamp()`), never a
-- node's. Payloads are ids, statuses, reason codes and times, never a token. Not copied by
-- migrate-store.
CREATE TABLE webhook_deliveries (
    id              BIGSERIAL PRIMARY KEY,
    endpoint        TEXT NOT NULL,
    message_id      TEXT NOT NULL,
    type            TEXT NOT NULL,
    credential_id   TEXT,
    payload         TEXT NOT NULL,
    created_at      BIGINT NOT NULL,
    delayed         BOOLEAN NOT NULL DEFAULT false,
    state           TEXT NOT NULL DEFAULT 'pending' CHECK (state IN ('pending', 'failed')),
    attempts        INTEGER NOT NULL DEFAULT 0,
    next_attempt_at BIGINT NOT NULL,
    last_error      TEXT,
    claim           TEXT,
    claimed_until   BIGINT
);
-- Each endpoint's due rows; each credential's pending rows per endpoint, in order; the delayed
-- rows a change drops (every announcing write looks, inside its transaction: never a scan); and
-- one row per endpoint and message (an event announced twice, such as a key rotation resumed).
CREATE INDEX webhook_deliveries_due ON webhook_deliveries(endpoint, next_attempt_at) WHERE state = 'pending';
CREATE INDEX webhook_deliveries_order ON webhook_deliveries(endpoint, credential_id, id) WHERE state = 'pending';
CREATE INDEX webhook_deliveries_delayed ON webhook_deliveries(credential_id) WHERE delayed AND state = 'pending';
CREATE UNIQUE INDEX webhook_deliveries_message ON webhook_deliveries(endpoint, message_id);
