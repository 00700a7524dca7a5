-- The developer console: passwords, browser sessions, and when a key was last used.

-- Argon2id PHC string (`$argon2id$v=19$m=19456,t=2,p=1$…`). NULL: the account cannot sign in
-- (created by an operator without a password).
ALTER TABLE accounts ADD COLUMN password_hash TEXT;

-- Console sessions (tower-sessions records): the session id is the cookie's value; `data` is the
-- record as JSON (account id, CSRF token). Expired rows are deleted every minute by `voiced serve`.
CREATE TABLE console_sessions (
    id          TEXT PRIMARY KEY,
    data        JSONB NOT NULL,
    expires_at  TIMESTAMPTZ NOT NULL
);
CREATE INDEX console_sessions_expires ON console_sessions (expires_at);

-- Updated at most once a minute per key (see store::keys::touch), so a busy key costs no write
-- per request.
ALTER TABLE api_keys ADD COLUMN last_used_at TIMESTAMPTZ;
