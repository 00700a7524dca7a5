-- Issue 26 item 3: an account's pronunciation rules, and the text a generation speaks once they
-- are applied. Numbered 0020: 0019 belongs to the webhooks work of the same wave.
CREATE TABLE pronunciations (
    id              TEXT PRIMARY KEY,
    account_id      TEXT NOT NULL REFERENCES accounts (id),
    text            TEXT NOT NULL CHECK (length(text) BETWEEN 1 AND 100),
    -- Exactly one of the two: other words to read, or IPA for the phonemiser.
    alias           TEXT CHECK (length(alias) BETWEEN 1 AND 200),
    phonemes        TEXT CHECK (length(phonemes) BETWEEN 1 AND 200),
    -- A voice language (ISO 639-1, optionally with a region) the rule is limited to; NULL: all.
    language        TEXT,
    case_sensitive  BOOLEAN NOT NULL DEFAULT false,
    created_at      TIMESTAMPTZ NOT NULL DEFAULT now(),
    CHECK ((alias IS NULL) <> (phonemes IS NULL))
);
CREATE INDEX pronunciations_account ON pronunciations (account_id, created_at DESC, id DESC);

-- The caller's text with the account's rules written in (alias rules replaced, phoneme rules as
-- inline overrides), as admission computed it; NULL when no rule applied. `text` stays what the
-- caller sent, which reads return; the worker renders this one.
ALTER TABLE generations ADD COLUMN spoken_text TEXT;
