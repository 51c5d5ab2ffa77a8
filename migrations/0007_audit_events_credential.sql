-- TokenVault schema, version 7: one credential's audit rows found by index.

-- `GET /v1/admin/audit?credential=…` and `tokenvault audit --credential` read a credential's
-- rows a page at a time, newest first by default; without this index (and a statement that
-- names `credential_id` alone, `VaultDatabase.auditSQL`) SQLite walked the whole trail, up to
-- `audit.max_rows`, to fill one page. PostgreSQL's schema has had the same index from its first
-- version.
CREATE INDEX audit_events_credential ON audit_events(credential_id, id);
