-- Tenant safety (admission before work, bounded spend, fairness, cancellation).

-- Estimated audio of a generation, from its text, counted against the allowance and the key's
-- ceiling while it is queued or running (the reservation). Completion replaces it with the
-- measured charge (usage_ledger) in the same transaction; failure or cancellation releases it.
ALTER TABLE generations ADD COLUMN estimated_ms BIGINT NOT NULL DEFAULT 0 CHECK (estimated_ms >= 0);
-- Set when the generation's synchronous caller went away or ran past the time limit: a queued
-- generation fails at once; a running one stops at its next sentence boundary. Never charged.
ALTER TABLE generations ADD COLUMN cancel_reason TEXT;
-- Admission counts each account's queued and running generations.
CREATE INDEX generations_account_pending ON generations (account_id) WHERE status = 'generating';
-- The fair claim orders accounts by when their last job started (within the hour).
CREATE INDEX generations_started ON generations (started_at) WHERE started_at IS NOT NULL;

-- A synchronous speech request's Idempotency-Key answers with its generation's audio; the
-- record names the generation instead of storing the bytes.
ALTER TABLE idempotency_records ADD COLUMN generation_id TEXT;
