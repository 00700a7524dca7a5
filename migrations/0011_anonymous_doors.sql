-- Anonymous doors (issue 23): a password change ends the account's other console sessions
-- (found by the account id in the session record), and OAuth errors are redirected only to a
-- redirect URI that a client has proven by redeeming a code issued to it.

CREATE INDEX console_sessions_account ON console_sessions ((data->>'account_id'));

-- (client, redirect URI) pairs that received a code and redeemed it at the token endpoint
-- with its PKCE verifier. Only these get OAuth errors as redirects; any other authorization
-- request in error gets the error page (no open redirector through a self-registered client).
CREATE TABLE oauth_proven_redirects (
    client_id     TEXT NOT NULL,
    redirect_uri  TEXT NOT NULL,
    proven_at     TIMESTAMPTZ NOT NULL DEFAULT now(),
    PRIMARY KEY (client_id, redirect_uri)
);
