-- Issue 36 item 6: webhooks are fair and bounded (docs/webhooks.md, "Fairness and bounds").
--
-- Deliveries were claimed oldest-due first from one pool of slots: one account's slow endpoints
-- and its backlog took every slot, and the claim sorted every due row. The claim now takes
-- turns like the generation queue's (0023): one row per account with something pending, the
-- account served least recently first (`FOR UPDATE SKIP LOCKED`, so concurrent claimers take
-- different accounts), then within it each enabled endpoint's oldest due rows, least recently
-- served endpoint first, at most 2 in flight per endpoint and 4 per account (the figures are
-- `service::webhooks`'). Its cost grows with the accounts that have something pending, not
-- with the rows pending.
--
-- Additive, as rolling deploys need: the previous release's claim (oldest due first, through
-- index webhook_deliveries_due, kept until a later release drops it) still works beside it;
-- the triggers below keep the turn table true whichever release writes.
CREATE TABLE webhook_accounts (
    account_id      TEXT PRIMARY KEY REFERENCES accounts (id) ON DELETE CASCADE,
    -- When the account last had its turn at the claim; NULL: never.
    last_served_at  TIMESTAMPTZ,
    -- No delivery of the account can be claimed before this (a lower bound, kept by the
    -- triggers below and recomputed by each turn); NULL: nothing pending.
    due_at          TIMESTAMPTZ,
    -- The resend rate limit: a fixed one-minute window and the resends in it.
    resends_since   TIMESTAMPTZ NOT NULL DEFAULT now(),
    resends         INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX webhook_accounts_turn ON webhook_accounts (last_served_at NULLS FIRST, account_id)
    WHERE due_at IS NOT NULL;

-- Rotation among one account's endpoints.
ALTER TABLE webhook_endpoints ADD COLUMN last_served_at TIMESTAMPTZ;

-- One endpoint's pending deliveries in due order (the claim, the pending cap, the purge of a
-- disabled endpoint's), and those held by a sender now (the in-flight caps).
CREATE INDEX webhook_deliveries_endpoint_due ON webhook_deliveries (endpoint_id, next_attempt_at)
    WHERE state = 'pending';
CREATE INDEX webhook_deliveries_endpoint_held ON webhook_deliveries (endpoint_id, locked_until)
    WHERE state = 'pending' AND locked_until IS NOT NULL;

-- A delivery that becomes pending (an event, a resend, a retry) makes its account due no later
-- than its next attempt; one whose hold ends (sent, given up, or retried) frees a place under
-- the caps, so its account is due now. The upsert takes the account row's lock: a turn that
-- is recomputing `due_at` holds it, so this write waits and then lowers that value.
CREATE FUNCTION webhook_account_due(account TEXT, due TIMESTAMPTZ) RETURNS void LANGUAGE sql AS $$
    INSERT INTO webhook_accounts (account_id, due_at) VALUES (account, due)
    ON CONFLICT (account_id) DO UPDATE
    SET due_at = LEAST(webhook_accounts.due_at, EXCLUDED.due_at)
$$;

CREATE FUNCTION webhook_delivery_written() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'UPDATE' AND OLD.locked_until IS NOT NULL THEN
        PERFORM webhook_account_due(NEW.account_id, now());
    ELSE
        PERFORM webhook_account_due(NEW.account_id, NEW.next_attempt_at);
    END IF;
    RETURN NULL;
END $$;
CREATE TRIGGER webhook_deliveries_pending AFTER INSERT ON webhook_deliveries
    FOR EACH ROW WHEN (NEW.state = 'pending') EXECUTE FUNCTION webhook_delivery_written();
CREATE TRIGGER webhook_deliveries_released AFTER UPDATE ON webhook_deliveries
    FOR EACH ROW WHEN (NEW.locked_until IS NULL
                       AND (NEW.state = 'pending' OR OLD.locked_until IS NOT NULL))
    EXECUTE FUNCTION webhook_delivery_written();

-- What is pending now takes its place in the turns.
INSERT INTO webhook_accounts (account_id, due_at)
SELECT d.account_id, min(d.next_attempt_at)
FROM webhook_deliveries d
WHERE d.state = 'pending' AND EXISTS (SELECT 1 FROM accounts a WHERE a.id = d.account_id)
GROUP BY d.account_id;
