-- TokenVault schema, version 3: an audit trail that stays bounded and shows tampering.

-- Token reads are aggregated: one row per caller (uid, pid), credential and outcome per
-- interval, with how many reads it stands for and when the last of them was.
ALTER TABLE audit_events ADD COLUMN count INTEGER NOT NULL DEFAULT 1 CHECK (count >= 1);
ALTER TABLE audit_events ADD COLUMN last_at INTEGER;
-- Each row's MAC over its content and the previous row's MAC, under the vault's audit key
-- (random, wrapped by the master key in vault_meta). NULL on rows written before version 3.
ALTER TABLE audit_events ADD COLUMN mac BLOB;

-- The chain's two ends: `anchor`, the last row pruned (pruning keeps the chain checkable), and
-- `head`, the last row written (rows removed from the end are noticed). Each carries a seal, a
-- MAC over its name, row and MAC, so neither can be moved by someone without the key.
CREATE TABLE audit_chain (
    name   TEXT PRIMARY KEY NOT NULL CHECK (name IN ('anchor', 'head')),
    row_id INTEGER NOT NULL,
    mac    BLOB NOT NULL,
    seal   BLOB NOT NULL
) STRICT;
