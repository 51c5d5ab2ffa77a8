-- TokenVault schema, version 2: the refresh engine.

-- Refresh failures since the last success; the engine's backoff grows with it.
ALTER TABLE credentials ADD COLUMN refresh_failures INTEGER NOT NULL DEFAULT 0 CHECK (refresh_failures >= 0);

-- Closed journal entries are pruned by age through this index.
CREATE INDEX refresh_attempts_finished ON refresh_attempts(finished_at) WHERE finished_at IS NOT NULL;
