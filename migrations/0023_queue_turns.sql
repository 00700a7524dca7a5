-- A fair claim whose cost does not grow with the queue (issue 28 item 2).
--
-- The claim read view `queue_served` (every generation and voice print started in the last
-- hour, aggregated per account) and sorted every eligible queued row on each call: 109 ms at
-- 100 000 queued. The order it computed, the account served least recently first and the
-- oldest job within it, is now kept as one row per account with work, in the same
-- transactions as enqueue and claim: the claim locks the first ready account through the index
-- below (`FOR UPDATE SKIP LOCKED`, so concurrent claimers take different accounts), then that
-- account's oldest claimable job through the per-account index.
--
-- Additive, as rolling deploys need (docs/deployment.md): the previous release's workers still
-- claim through view `queue_served` (kept, with its index generations_started, until a later
-- release drops both), and work its serve processes queue is put in the order by the triggers
-- below, which every writer passes through.
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

-- A new generation, or a voice print to compute, puts its account in the order (an account
-- that had no work waits from now), in the transaction that queues it. The row lock is the
-- point: a claim marking the account idle holds it, so this write waits and then undoes that.
CREATE FUNCTION queue_account_has_work(account TEXT) RETURNS void LANGUAGE sql AS $$
    INSERT INTO queue_accounts (account_id) VALUES (account)
    ON CONFLICT (account_id) DO UPDATE
    SET ready = true,
        waiting_since = CASE WHEN queue_accounts.ready THEN queue_accounts.waiting_since
                             ELSE now() END
$$;

CREATE FUNCTION queue_generation_queued() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM queue_account_has_work(NEW.account_id);
    RETURN NULL;
END $$;
CREATE TRIGGER generations_queue_turn AFTER INSERT ON generations
    FOR EACH ROW WHEN (NEW.status = 'generating') EXECUTE FUNCTION queue_generation_queued();

CREATE FUNCTION queue_print_queued() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM queue_account_has_work(v.account_id) FROM voice_profiles v WHERE v.id = NEW.voice_id;
    RETURN NULL;
END $$;
CREATE TRIGGER voice_prints_queue_turn AFTER INSERT ON voice_prints
    FOR EACH ROW WHEN (NEW.print IS NULL AND NEW.error IS NULL)
    EXECUTE FUNCTION queue_print_queued();
