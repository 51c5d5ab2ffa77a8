-- The grant the vault renews a credential by, with nobody signing in, as JSON: a client
-- credentials grant, or a token exchange of another credential's access token (the subject is
-- named, never held). NULL for tokens a person's sign-in gave, which are renewed by their refresh
-- token if they have one. Not secret: the client's own secret or key belongs to the provider
-- instance's configuration.
ALTER TABLE credentials ADD COLUMN grant_parameters TEXT
    CHECK (grant_parameters IS NULL OR json_typeof(grant_parameters::json) = 'object');
