-- Issue 30 item 4: an account's data under its own control.
--
-- A deleted voice profile keeps its row (its generations reference it and are kept for
-- metering), marked `deleted_at`; its recordings and voice print are deleted with it, and its
-- name is free again: uniqueness of names covers live profiles only.
ALTER TABLE voice_profiles ADD COLUMN deleted_at TIMESTAMPTZ;
ALTER TABLE voice_profiles DROP CONSTRAINT voice_profiles_account_name;
CREATE UNIQUE INDEX voice_profiles_account_name ON voice_profiles (account_id, name)
    WHERE deleted_at IS NULL;

-- A deleted account keeps its row (the usage ledger and the generations' metering reference
-- it), marked `deleted_at` at once (its email replaced, so that it can sign up again; keys,
-- tokens and sessions ended in the same transaction); the background purge removes its content
-- and blobs and sets `purged_at`.
ALTER TABLE accounts ADD COLUMN deleted_at TIMESTAMPTZ;
ALTER TABLE accounts ADD COLUMN purged_at TIMESTAMPTZ;
CREATE INDEX accounts_to_purge ON accounts (deleted_at) WHERE deleted_at IS NOT NULL AND purged_at IS NULL;
