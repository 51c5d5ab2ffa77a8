-- TokenVault schema, version 5: one audit chain per node (issue 22: an audited write waits only
-- for its own node's, never for a node that froze in the middle of one).

-- Each row belongs to a chain (a node's identity; '' is the vault's first chain, which holds
-- every row written before this version and which a SQLite vault keeps) at a position, 1, 2,
-- 3... within it: a gap is a removed row. Ids still order all rows and page through them.
ALTER TABLE audit_events ADD COLUMN chain TEXT NOT NULL DEFAULT '';
ALTER TABLE audit_events ADD COLUMN position INTEGER NOT NULL DEFAULT 0;
UPDATE audit_events SET position = id;
CREATE UNIQUE INDEX audit_events_chain_position ON audit_events(chain, position);

-- Both ends of every chain. Rebuilt to key them by chain and name (SQLite cannot change a
-- primary key in place); the vault's first chain keeps its ends, at positions equal to rows.
CREATE TABLE audit_chain_v5 (
    name     TEXT NOT NULL CHECK (name IN ('anchor', 'head')),
    row_id   INTEGER NOT NULL,
    mac      BLOB NOT NULL,
    seal     BLOB NOT NULL,
    chain    TEXT NOT NULL DEFAULT '',
    position INTEGER NOT NULL,
    PRIMARY KEY (chain, name)
) STRICT;
INSERT INTO audit_chain_v5 (name, row_id, mac, seal, chain, position)
    SELECT name, row_id, mac, seal, '', row_id FROM audit_chain;
DROP TABLE audit_chain;
ALTER TABLE audit_chain_v5 RENAME TO audit_chain;
