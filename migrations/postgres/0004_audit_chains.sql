-- TokenVault schema, version 4: one audit chain per node (issue 22: an audited write waits only
-- for its own node's chain, never for a node that froze in the middle of one; until now every
-- audited write of every node took one advisory lock).

-- Each row belongs to a chain (the node's identity; '' is the vault's first chain, which holds
-- every row written before this version) at a position, 1, 2, 3... within it: a gap is a removed
-- row. Ids still order all rows and page through them; they come from a sequence now, so a
-- transaction rolled back leaves a gap in the ids, never in a chain.
ALTER TABLE audit_events ADD COLUMN chain TEXT NOT NULL DEFAULT '';
ALTER TABLE audit_events ADD COLUMN position BIGINT;
UPDATE audit_events SET position = id;
ALTER TABLE audit_events ALTER COLUMN position SET NOT NULL;
CREATE UNIQUE INDEX audit_events_chain_position ON audit_events(chain, position);

CREATE SEQUENCE audit_event_ids;
SELECT setval('audit_event_ids',
    GREATEST((SELECT max(id) FROM audit_events), (SELECT max(row_id) FROM audit_chain), 0) + 1, false);

-- Both ends of every chain, keyed by chain and name.
ALTER TABLE audit_chain ADD COLUMN chain TEXT NOT NULL DEFAULT '';
ALTER TABLE audit_chain ADD COLUMN position BIGINT;
UPDATE audit_chain SET position = row_id;
ALTER TABLE audit_chain ALTER COLUMN position SET NOT NULL;
ALTER TABLE audit_chain DROP CONSTRAINT audit_chain_pkey;
ALTER TABLE audit_chain ADD PRIMARY KEY (chain, name);
