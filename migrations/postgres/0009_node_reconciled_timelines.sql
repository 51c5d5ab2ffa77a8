-- PostgreSQL schema, version 9: the database timeline each node has reconciled.

-- After a failover to a standby that lagged, the database lacks the last commits and their
-- rotated tokens. Every node keeps its recent commits on its own disk and, when a beat finds the
-- database on a new timeline, writes back what was lost, then reports that timeline here. No node
-- presents a refresh token until every live node has reported the current one
-- (docs/scale-out.md, "Failover").
ALTER TABLE nodes ADD COLUMN reconciled_timeline BIGINT;
