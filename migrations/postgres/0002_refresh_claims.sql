-- Due credentials claimed by the node that will refresh them (issue 15): each node's due scan
-- leaves out what another node claimed moments ago and claims what it returns, for a few
-- seconds, so several nodes spread the due list between them instead of all starting on its
-- head (where all but one of them would find the lease taken). A claim only spreads work; the
-- journal's lease and the credential's lock still fence every refresh. No trigger: claims are
-- not changes the other nodes hear of. Credentials deleted leave their claim, pruned once old.
CREATE TABLE refresh_claims (
    credential_id TEXT PRIMARY KEY NOT NULL,
    node          TEXT NOT NULL,
    until         BIGINT NOT NULL
);
CREATE INDEX refresh_claims_until ON refresh_claims(until);
