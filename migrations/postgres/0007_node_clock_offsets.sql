-- PostgreSQL schema, version 7: each node's clock offset, for operators.

-- Every node measures its clock against the database's at each heartbeat and decides expiry on
-- the corrected time (docs/scale-out.md). The beat writes the last offset it measured, in
-- milliseconds (the database's clock minus the node's), so `tokenvault nodes` shows every node's.
ALTER TABLE nodes ADD COLUMN clock_offset_ms BIGINT;
