-- Delivered audio is charged (issue 36 item 1, DECISIONS "Metering amended").
--
-- A synchronous generation streamed to its caller and cancelled after its first audio byte left
-- the server (the client hung up, the time limit, shutdown, a cancelled live context) is charged
-- the audio it delivered. The delivery that cancels it records how much left
-- (`delivered_ms`, store::queue::cancel: the audio rendered up to the last chunk handed to the
-- connection); the charge is written by the trigger below in the statement, and so the
-- transaction, that marks the generation `failed`, whichever path does it (the cancellation
-- itself, the worker's fail, a hand-back at shutdown, an expired lease), exactly once (the
-- ledger's unique generation_id). The generation keeps `status = 'failed'`; its `duration_ms`
-- is what was charged and its `error` says so. Engine failures record no `delivered_ms`: they
-- are never charged.
ALTER TABLE generations ADD COLUMN delivered_ms BIGINT CHECK (delivered_ms >= 0);

CREATE FUNCTION generations_charge_delivered() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.status = 'failed' AND OLD.status = 'generating' AND NEW.delivered_ms > 0 THEN
        NEW.duration_ms := NEW.delivered_ms;
        NEW.error := COALESCE(NEW.error, 'cancelled') || '; ' || to_char(NEW.delivered_ms / 1000.0, 'FM999999990.0')
            || ' s of audio had been delivered and were charged';
        INSERT INTO usage_ledger (account_id, api_key_id, generation_id, month, audio_ms)
        VALUES (NEW.account_id, NEW.api_key_id, NEW.id,
                date_trunc('month', now() AT TIME ZONE 'UTC')::date, NEW.delivered_ms)
        ON CONFLICT (generation_id) DO NOTHING;
    END IF;
    RETURN NEW;
END
$$;

CREATE TRIGGER generations_charge_delivered
    BEFORE UPDATE OF status ON generations
    FOR EACH ROW EXECUTE FUNCTION generations_charge_delivered();

-- Transcribed audio, metered (issue 36 item 3): one row per capture, written in the capture's
-- transaction, kept when the capture is deleted (deleting a capture gives no minutes back).
-- `free`: made by the app's free use of an account without a plan, counted against
-- `app_free_transcription_minutes`.
CREATE TABLE transcription_ledger (
    id           BIGSERIAL PRIMARY KEY,
    account_id   TEXT NOT NULL REFERENCES accounts (id),
    capture_id   TEXT NOT NULL UNIQUE,
    month        DATE NOT NULL,
    audio_ms     BIGINT NOT NULL CHECK (audio_ms >= 0),
    free         BOOLEAN NOT NULL,
    created_at   TIMESTAMPTZ NOT NULL DEFAULT now()
);
CREATE INDEX transcription_ledger_account_month ON transcription_ledger (account_id, month);
