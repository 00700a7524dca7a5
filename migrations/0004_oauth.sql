-- OAuth 2.1 authorization server (docs/oauth.md): registered clients, authorization codes,
-- authorizations (one per consent: the family its tokens belong to) and tokens. Secrets (codes,
-- access and refresh tokens) are stored as SHA-256 only.

-- Clients made by dynamic registration (RFC 7591). Clients identified by a metadata document URL
-- (CIMD) are not stored: their document is fetched and cached in memory.
CREATE TABLE oauth_clients (
    id             TEXT PRIMARY KEY,
    name           TEXT NOT NULL,
    redirect_uris  TEXT[] NOT NULL CHECK (cardinality(redirect_uris) > 0),
    client_uri     TEXT,
    created_at     TIMESTAMPTZ NOT NULL DEFAULT now()
);

-- One consent that was exchanged for tokens. Revoking it (console, a reused code, a reused
-- refresh token, revoking a refresh token) ends every token of the family at once.
CREATE TABLE oauth_authorizations (
    id            TEXT PRIMARY KEY,
    account_id    TEXT NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    -- A registered client's id or a metadata document URL; the name as the consent page showed it.
    client_id     TEXT NOT NULL,
    client_name   TEXT NOT NULL,
    scopes        TEXT[] NOT NULL,
    resources     TEXT[] NOT NULL,
    created_at    TIMESTAMPTZ NOT NULL DEFAULT now(),
    -- Updated at most once a minute (like api_keys.last_used_at).
    last_used_at  TIMESTAMPTZ,
    revoked_at    TIMESTAMPTZ
);
CREATE INDEX oauth_authorizations_account ON oauth_authorizations (account_id, created_at);

-- Authorization codes: single use, 10 minutes, bound to everything the consent covered.
-- `authorization_id` is set when the code is redeemed; a second redemption revokes it.
CREATE TABLE oauth_codes (
    code_sha256       BYTEA PRIMARY KEY,
    account_id        TEXT NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    client_id         TEXT NOT NULL,
    client_name       TEXT NOT NULL,
    redirect_uri      TEXT NOT NULL,
    -- BASE64URL(SHA-256(code_verifier)) as the client sent it (S256 only).
    code_challenge    TEXT NOT NULL,
    scopes            TEXT[] NOT NULL,
    resources         TEXT[] NOT NULL,
    expires_at        TIMESTAMPTZ NOT NULL,
    authorization_id  TEXT REFERENCES oauth_authorizations (id) ON DELETE CASCADE,
    created_at        TIMESTAMPTZ NOT NULL DEFAULT now()
);
CREATE INDEX oauth_codes_expires ON oauth_codes (expires_at);

-- Access tokens (`vat_…`, 1 hour) and refresh tokens (`vrt_…`, 30 days). A refresh token is
-- rotated on every use: `rotated_at` marks the old one, whose reuse revokes the family.
CREATE TABLE oauth_tokens (
    token_sha256      BYTEA PRIMARY KEY,
    kind              TEXT NOT NULL CHECK (kind IN ('access', 'refresh')),
    authorization_id  TEXT NOT NULL REFERENCES oauth_authorizations (id) ON DELETE CASCADE,
    scopes            TEXT[] NOT NULL,
    -- The audience: resource URIs the token is good for (RFC 8707).
    resources         TEXT[] NOT NULL,
    expires_at        TIMESTAMPTZ NOT NULL,
    rotated_at        TIMESTAMPTZ,
    revoked_at        TIMESTAMPTZ,
    created_at        TIMESTAMPTZ NOT NULL DEFAULT now()
);
CREATE INDEX oauth_tokens_authorization ON oauth_tokens (authorization_id);
CREATE INDEX oauth_tokens_expires ON oauth_tokens (expires_at);
