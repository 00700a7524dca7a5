-- Cloned voices (issue 16): the reference audio a cloned profile is made from, and the engine's
-- conditioning computed from it once (the voice print), so that generations never go back to
-- the reference audio.

-- The reference clips of a cloned profile, as uploaded (any format voiced's decoder reads),
-- checked before they were stored (5 to 30 s, not silent, not clipped). `sample_count` on the
-- profile is the number of rows here.
CREATE TABLE voice_samples (
    voice_id     TEXT NOT NULL REFERENCES voice_profiles (id) ON DELETE CASCADE,
    ordinal      INTEGER NOT NULL CHECK (ordinal >= 0),
    audio        BYTEA NOT NULL,
    duration_ms  INTEGER NOT NULL CHECK (duration_ms > 0),
    -- What is said in the clip, when the cloning door was given it (engines that use one).
    transcript   TEXT,
    created_at   TIMESTAMPTZ NOT NULL DEFAULT now(),
    PRIMARY KEY (voice_id, ordinal)
);

-- A cloned profile's voice print: opaque, versioned bytes from the engine's `voice_print`.
-- `print` is NULL until it is computed: `voiced admin voice clone` computes it in-process where
-- the engine is installed; otherwise (and for the console's uploads) the row is a job that a
-- generation worker claims like a generation (FOR UPDATE SKIP LOCKED, lease, max_attempts).
-- The voice's generations wait in the queue until the print is there; a print that cannot be
-- computed gets `error`, and the voice's waiting generations fail with it.
CREATE TABLE voice_prints (
    voice_id          TEXT PRIMARY KEY REFERENCES voice_profiles (id) ON DELETE CASCADE,
    engine            TEXT NOT NULL,
    print             BYTEA,
    error             TEXT,
    attempts          INTEGER NOT NULL DEFAULT 0,
    max_attempts      INTEGER NOT NULL DEFAULT 3,
    lease_owner       TEXT,
    lease_expires_at  TIMESTAMPTZ,
    created_at        TIMESTAMPTZ NOT NULL DEFAULT now(),
    computed_at       TIMESTAMPTZ,
    CHECK (print IS NULL OR error IS NULL)
);
CREATE INDEX voice_prints_pending ON voice_prints (created_at)
    WHERE print IS NULL AND error IS NULL;
