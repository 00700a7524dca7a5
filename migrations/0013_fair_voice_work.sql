-- Fair and bounded voice work (issue 23 item 6).
--
-- Voice-print jobs were claimed ahead of every generation, so one account's clones delayed every
-- other account's speech. They now take part in the fair claim: the account served least
-- recently goes first, whatever kind of job it waits on. A print job records when it was
-- claimed, and `queue_served` is the one definition of "when was this account last served",
-- read by both claims (store::queue, store::prints).

ALTER TABLE voice_prints ADD COLUMN started_at TIMESTAMPTZ;

-- The last time within the hour each account had a generation or a voice print started.
CREATE VIEW queue_served AS
SELECT account_id, max(started_at) AS last_started
FROM (
    SELECT account_id, started_at FROM generations
    WHERE started_at > now() - interval '1 hour'
    UNION ALL
    SELECT v.account_id, p.started_at FROM voice_prints p JOIN voice_profiles v ON v.id = p.voice_id
    WHERE p.started_at > now() - interval '1 hour'
) served
GROUP BY account_id;

-- Cloning is a plan feature now (403 feature_not_enabled outside it). Paying accounts could
-- clone before this migration: they keep it.
UPDATE accounts SET features = array_append(features, 'cloning')
WHERE plan IN ('pro', 'trial') AND NOT ('cloning' = ANY (features));
