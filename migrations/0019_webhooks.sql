-- Issue 27 item 1: webhooks (Standard Webhooks). An account's endpoints, and the outbox of
-- deliveries: one row per (event, endpoint), written in the transaction that records the event
-- (a generation's completion or failure, a capture's creation), sent and retried by the worker.

CREATE TABLE webhook_endpoints (
    id                  TEXT PRIMARY KEY,                       -- whep_…
    account_id          TEXT NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    url                 TEXT NOT NULL,
    events              TEXT[] NOT NULL,
    description         TEXT NOT NULL DEFAULT '',
    enabled             BOOLEAN NOT NULL DEFAULT true,
    -- Why it was disabled (`gone`: the receiver answered 410; `failing`: 3 days of failures).
    disabled_reason     TEXT,
    -- The signing secret, sealed (AES-256-GCM under a key derived from the signing secret,
    -- the endpoint id as associated data): nonce || ciphertext || tag.
    secret_sealed       BYTEA NOT NULL,
    -- After a rotation the previous secret signs too, until `previous_expires_at`.
    previous_sealed     BYTEA,
    previous_expires_at TIMESTAMPTZ,
    -- Since when every attempt has failed (NULL after a success).
    failing_since       TIMESTAMPTZ,
    created_at          TIMESTAMPTZ NOT NULL DEFAULT now()
);
CREATE INDEX webhook_endpoints_account ON webhook_endpoints (account_id, created_at);

CREATE TABLE webhook_deliveries (
    id              TEXT PRIMARY KEY,                           -- msg_…: the `webhook-id`
    endpoint_id     TEXT NOT NULL REFERENCES webhook_endpoints (id) ON DELETE CASCADE,
    account_id      TEXT NOT NULL,
    event_type      TEXT NOT NULL,
    subject_id      TEXT NOT NULL,
    event_at        TIMESTAMPTZ NOT NULL,
    -- pending: to send (again); delivered: a 2xx came back; failed: given up.
    state           TEXT NOT NULL DEFAULT 'pending'
                    CHECK (state IN ('pending', 'delivered', 'failed')),
    attempts        INTEGER NOT NULL DEFAULT 0,
    next_attempt_at TIMESTAMPTZ NOT NULL DEFAULT now(),
    -- A worker sending it holds it until then (a worker that dies mid-send lets it go).
    locked_until    TIMESTAMPTZ,
    last_status     INTEGER,
    last_error      TEXT,
    last_attempt_at TIMESTAMPTZ,
    created_at      TIMESTAMPTZ NOT NULL DEFAULT now()
);
CREATE INDEX webhook_deliveries_due ON webhook_deliveries (next_attempt_at) WHERE state = 'pending';
CREATE INDEX webhook_deliveries_endpoint ON webhook_deliveries (endpoint_id, created_at DESC);
