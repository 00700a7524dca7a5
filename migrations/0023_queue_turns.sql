-- A fair claim whose cost does not grow with the queue (issue 28 item 2).
--
-- The claim read view `queue_served` (every generation and voice print started in the last
-- hour, aggregated per account) and sorted every eligible queued row on each call: 109 ms at
-- 100 000 queued. The order it computed, the account served least recently first and the
-- oldest job within it, is now kept as one row per account with work, in the same
-- transactions as enqueue and claim: the claim locks the first ready account through the index
-- below (`FOR UPDATE SKIP LOCKED`, so concurrent claimers take different accounts), then that
-- account's oldest claimable job through the per-account index.
CREATE TABLE queue_accounts (
    account_id      TEXT PRIMARY KEY REFERENCES accounts (id) ON DELETE CASCADE,
    -- When a generation or voice print of the account was last claimed; NULL: never.
    last_served_at  TIMESTAMPTZ,
    -- When the account last went from no work to some (the turn of never-served accounts).
    waiting_since   TIMESTAMPTZ NOT NULL DEFAULT now(),
    -- Some generation of the account is `generating` or a voice print of it is pending. Set by
    -- enqueue; cleared by the claim that finds the account with no unfinished work left.
    ready           BOOLEAN NOT NULL DEFAULT true
);
CREATE INDEX queue_accounts_turn ON queue_accounts (last_served_at NULLS FIRST, waiting_since, account_id)
    WHERE ready;

-- One account's oldest unfinished generations (also what the pending cap counts, which read
-- generations_account_pending before).
CREATE INDEX generations_account_queue ON generations (account_id, created_at, id)
    WHERE status = 'generating';
DROP INDEX generations_account_pending;

-- The work waiting now keeps its place: the last hour's service as the old view saw it.
INSERT INTO queue_accounts (account_id, last_served_at, waiting_since)
SELECT w.account_id, s.last_started, w.since
FROM (
    SELECT account_id, min(created_at) AS since FROM (
        SELECT account_id, created_at FROM generations WHERE status = 'generating'
        UNION ALL
        SELECT v.account_id, p.created_at FROM voice_prints p
        JOIN voice_profiles v ON v.id = p.voice_id
        WHERE p.print IS NULL AND p.error IS NULL
    ) work
    GROUP BY account_id
) w
LEFT JOIN queue_served s ON s.account_id = w.account_id;

DROP VIEW queue_served;
-- It served only the view; one index fewer to write on every claim.
DROP INDEX generations_started;
