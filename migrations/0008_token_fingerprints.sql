-- OAuth access tokens join the credential fingerprints (0006_scale.sql), keyed by the SHA-256 of
-- the token, listing only live ones (not revoked, authorization not revoked, not expired), so that
-- the read statements, which join this view on the presented credential's hash, serve token
-- reads too. Tokens are not kept in the principal cache: each request looks its token up and its
-- read only needs the row to be there (`CredentialCheck::verified`).
CREATE OR REPLACE VIEW credential_fingerprints AS
SELECT k.secret_sha256 AS credential_sha256,
       row(k.id, k.account_id, k.scopes, k.ceiling_minutes, a.plan, a.features)::text AS fingerprint
FROM api_keys k
JOIN accounts a ON a.id = k.account_id
WHERE k.revoked_at IS NULL
UNION ALL
SELECT t.token_sha256 AS credential_sha256,
       row(t.authorization_id, z.account_id, t.scopes, a.plan, a.features)::text AS fingerprint
FROM oauth_tokens t
JOIN oauth_authorizations z ON z.id = t.authorization_id
JOIN accounts a ON a.id = z.account_id
WHERE t.kind = 'access' AND t.revoked_at IS NULL AND z.revoked_at IS NULL AND t.expires_at > now();
