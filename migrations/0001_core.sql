-- Core schema: accounts, API keys, voice profiles, generations (with the columns of the leased
-- queue), blobs, captures, idempotency records and the usage ledger. Append-only: later changes go
-- in new files.

CREATE TABLE accounts (
    id          TEXT PRIMARY KEY,
    email       TEXT NOT NULL UNIQUE,
    plan        TEXT NOT NULL CHECK (plan IN ('pro', 'trial', 'none')),
    -- Capabilities the account's plan includes (see docs/api.md, "Plans and features").
    features    TEXT[] NOT NULL,
    created_at  TIMESTAMPTZ NOT NULL DEFAULT now(),
    updated_at  TIMESTAMPTZ NOT NULL DEFAULT now()
);

CREATE TABLE api_keys (
    id               TEXT PRIMARY KEY,
    account_id       TEXT NOT NULL REFERENCES accounts (id),
    name             TEXT NOT NULL DEFAULT '',
    -- First 12 characters of the secret, to recognise a key in lists. Never the secret itself.
    prefix           TEXT NOT NULL,
    -- SHA-256 of the whole secret; lookups go by this hash.
    secret_sha256    BYTEA NOT NULL UNIQUE,
    scopes           TEXT[] NOT NULL,
    ceiling_minutes  INTEGER CHECK (ceiling_minutes IS NULL OR ceiling_minutes >= 0),
    created_at       TIMESTAMPTZ NOT NULL DEFAULT now(),
    revoked_at       TIMESTAMPTZ
);
CREATE INDEX api_keys_account ON api_keys (account_id);

CREATE TABLE voice_profiles (
    id                  TEXT PRIMARY KEY,
    account_id          TEXT NOT NULL REFERENCES accounts (id),
    name                TEXT NOT NULL,
    description         TEXT NOT NULL DEFAULT '',
    language            TEXT NOT NULL,
    voice_type          TEXT NOT NULL CHECK (voice_type IN ('preset', 'cloned')),
    engine              TEXT NOT NULL,
    preset              TEXT,
    pinned_seed         BIGINT CHECK (pinned_seed IS NULL OR pinned_seed BETWEEN 0 AND 9007199254740991),
    pinned_temperature  REAL CHECK (pinned_temperature IS NULL OR pinned_temperature BETWEEN 0.05 AND 2),
    personality_prompt  TEXT,
    generation_count    BIGINT NOT NULL DEFAULT 0,
    sample_count        INTEGER NOT NULL DEFAULT 0,
    created_at          TIMESTAMPTZ NOT NULL DEFAULT now(),
    updated_at          TIMESTAMPTZ NOT NULL DEFAULT now(),
    CONSTRAINT voice_profiles_account_name UNIQUE (account_id, name)
);

CREATE TABLE generations (
    id                TEXT PRIMARY KEY,
    account_id        TEXT NOT NULL REFERENCES accounts (id),
    api_key_id        TEXT REFERENCES api_keys (id),
    voice_id          TEXT NOT NULL REFERENCES voice_profiles (id),
    engine            TEXT NOT NULL,
    text              TEXT NOT NULL,
    seed              BIGINT NOT NULL CHECK (seed BETWEEN 0 AND 9007199254740991),
    temperature       REAL,
    format            TEXT NOT NULL CHECK (format IN ('mp3', 'opus', 'wav')),
    status            TEXT NOT NULL CHECK (status IN ('generating', 'completed', 'failed')),
    error             TEXT,
    duration_ms       BIGINT,
    -- Key of the audio in the blob store once completed.
    audio_key         TEXT,
    -- Leased queue: a worker claims a row with FOR UPDATE SKIP LOCKED and holds it until
    -- lease_expires_at; an expired lease is claimed again, up to max_attempts.
    attempts          INTEGER NOT NULL DEFAULT 0,
    max_attempts      INTEGER NOT NULL DEFAULT 3,
    lease_owner       TEXT,
    lease_expires_at  TIMESTAMPTZ,
    created_at        TIMESTAMPTZ NOT NULL DEFAULT now(),
    started_at        TIMESTAMPTZ,
    finished_at       TIMESTAMPTZ,
    updated_at        TIMESTAMPTZ NOT NULL DEFAULT now()
);
CREATE INDEX generations_pending ON generations (created_at) WHERE status = 'generating';
CREATE INDEX generations_account ON generations (account_id, created_at DESC);

-- Default blob store: audio bytes in PostgreSQL.
CREATE TABLE blobs (
    key           TEXT PRIMARY KEY,
    content_type  TEXT NOT NULL,
    bytes         BYTEA NOT NULL,
    created_at    TIMESTAMPTZ NOT NULL DEFAULT now()
);

CREATE TABLE captures (
    id                  TEXT PRIMARY KEY,
    account_id          TEXT NOT NULL REFERENCES accounts (id),
    api_key_id          TEXT REFERENCES api_keys (id),
    source              TEXT NOT NULL CHECK (source IN ('api', 'app', 'agent')),
    language            TEXT NOT NULL,
    duration_ms         BIGINT NOT NULL CHECK (duration_ms >= 0),
    transcript_raw      TEXT NOT NULL,
    transcript_refined  TEXT NOT NULL,
    created_at          TIMESTAMPTZ NOT NULL DEFAULT now()
);
CREATE INDEX captures_account_recent ON captures (account_id, created_at DESC, id DESC);

-- Idempotency-Key records, scoped to the account. The primary key makes concurrent duplicates
-- race safely: exactly one INSERT wins, the others see the row.
CREATE TABLE idempotency_records (
    account_id        TEXT NOT NULL REFERENCES accounts (id),
    key               TEXT NOT NULL,
    request_sha256    BYTEA NOT NULL,
    state             TEXT NOT NULL CHECK (state IN ('in_progress', 'completed')),
    response_status   INTEGER,
    response_headers  JSONB,
    response_body     BYTEA,
    created_at        TIMESTAMPTZ NOT NULL DEFAULT now(),
    PRIMARY KEY (account_id, key)
);
CREATE INDEX idempotency_records_created ON idempotency_records (created_at);

-- Usage ledger: one row per completed generation, written in the transaction that marks it
-- completed (the unique generation_id makes a double charge impossible).
CREATE TABLE usage_ledger (
    id             BIGSERIAL PRIMARY KEY,
    account_id     TEXT NOT NULL REFERENCES accounts (id),
    api_key_id     TEXT REFERENCES api_keys (id),
    generation_id  TEXT NOT NULL UNIQUE REFERENCES generations (id),
    month          DATE NOT NULL,
    audio_ms       BIGINT NOT NULL CHECK (audio_ms >= 0),
    created_at     TIMESTAMPTZ NOT NULL DEFAULT now()
);
CREATE INDEX usage_ledger_account_month ON usage_ledger (account_id, month);
CREATE INDEX usage_ledger_key_month ON usage_ledger (api_key_id, month);
