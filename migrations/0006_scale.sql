-- One round trip per authenticated read (docs/architecture.md, "Authentication on the read
-- path"): every credential that authorizes anything now, by the SHA-256 of its secret, with one
-- text value holding everything that authorizes it. A process keeps principals in memory keyed
-- by that hash; every read statement recomputes the fingerprint from this view in the statement
-- that reads, and a result whose fingerprint differs (or is missing: revoked, or gone) is
-- discarded and the credential looked up again. So a revoked key, a changed plan, scopes,
-- features or ceiling show on the very next request in every process, without invalidation
-- messages.
--
-- Another kind of credential (OAuth access tokens) joins with `UNION ALL`, keyed by the SHA-256
-- of its secret too, its row listing only live credentials (not revoked, not expired).
CREATE VIEW credential_fingerprints AS
SELECT k.secret_sha256 AS credential_sha256,
       row(k.id, k.account_id, k.scopes, k.ceiling_minutes, a.plan, a.features)::text AS fingerprint
FROM api_keys k
JOIN accounts a ON a.id = k.account_id
WHERE k.revoked_at IS NULL;
