-- An API key's fingerprint (0006_scale.sql: everything that authorizes it) is kept on the key
-- row, so that the read statements' credential check is one index probe on api_keys instead of a
-- join with accounts and a record-to-text conversion on every read (docs/benchmarks.md, issue 14:
-- PostgreSQL's CPU per authenticated read). Triggers keep it exact, whatever statement changes
-- what it is made of:
-- - a key's insert or a change of its scopes or ceiling recomputes it (BEFORE, so the row and its
--   fingerprint change together);
-- - a change of an account's plan or features recomputes every key of the account in the same
--   transaction.
-- So a read committed after such a change sees the new fingerprint, as it did through the join.
-- The value is the same text the view computed before (row(...)::text), so principals cached
-- before this migration still confirm.

ALTER TABLE api_keys ADD COLUMN fingerprint text;

CREATE FUNCTION api_key_fingerprint() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    -- No account row: the foreign key refuses the insert at the end of the statement; '' only
    -- keeps NOT NULL from refusing it first with another error.
    NEW.fingerprint := COALESCE((
        SELECT row(NEW.id, NEW.account_id, NEW.scopes, NEW.ceiling_minutes, a.plan,
                   a.features)::text
        FROM accounts a WHERE a.id = NEW.account_id), '');
    RETURN NEW;
END $$;

CREATE TRIGGER api_key_fingerprint
    BEFORE INSERT OR UPDATE OF id, account_id, scopes, ceiling_minutes, fingerprint ON api_keys
    FOR EACH ROW EXECUTE FUNCTION api_key_fingerprint();

CREATE FUNCTION account_key_fingerprints() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    -- Touching the column fires api_key_fingerprint, which recomputes it.
    UPDATE api_keys SET fingerprint = NULL WHERE account_id = NEW.id;
    RETURN NULL;
END $$;

CREATE TRIGGER account_key_fingerprints
    AFTER UPDATE OF plan, features ON accounts
    FOR EACH ROW
    WHEN (OLD.plan IS DISTINCT FROM NEW.plan OR OLD.features IS DISTINCT FROM NEW.features)
    EXECUTE FUNCTION account_key_fingerprints();

UPDATE api_keys SET fingerprint = NULL;
ALTER TABLE api_keys ALTER COLUMN fingerprint SET NOT NULL;

CREATE OR REPLACE VIEW credential_fingerprints AS
SELECT k.secret_sha256 AS credential_sha256, k.fingerprint
FROM api_keys k
WHERE k.revoked_at IS NULL
UNION ALL
SELECT t.token_sha256 AS credential_sha256,
       row(t.authorization_id, z.account_id, t.scopes, a.plan, a.features)::text AS fingerprint
FROM oauth_tokens t
JOIN oauth_authorizations z ON z.id = t.authorization_id
JOIN accounts a ON a.id = z.account_id
WHERE t.kind = 'access' AND t.revoked_at IS NULL AND z.revoked_at IS NULL AND t.expires_at > now();
