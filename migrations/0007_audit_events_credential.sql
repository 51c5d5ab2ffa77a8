-- TokenVault schema, version 7: one credential's audit rows found by index.

-- `GET /v1/admin/audit?credential=…` and `tokenvault audit --credential` read a credential's
-- rows newest first; without this index SQLite walked the whole trail (up to `audit.max_rows`)
-- for a credential with few rows. PostgreSQL's schema has had the same index from its first
-- version.
CREATE INDEX audit_events_credential ON audit_events(credential_id, id);
