-- Dashboard sessions: a signed-in browser's token is kept only as its SHA-256, tied to the
-- personal key it was signed in with (a revoked key ends its sessions; a deleted one takes
-- them along).
CREATE TABLE dashboard_sessions (
    token_hash bytea PRIMARY KEY CHECK (length(token_hash) = 32),
    key_id uuid NOT NULL REFERENCES api_keys (id) ON DELETE CASCADE,
    created_at timestamptz NOT NULL DEFAULT now(),
    expires_at timestamptz NOT NULL
);
CREATE INDEX dashboard_sessions_key ON dashboard_sessions (key_id);
CREATE INDEX dashboard_sessions_expiry ON dashboard_sessions (expires_at);
