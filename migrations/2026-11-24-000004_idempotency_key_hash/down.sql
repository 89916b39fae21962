-- The keys cannot be recovered from their hashes: the table returns to its earlier form empty
-- (records live 24 hours; a resend after this runs again).
DROP TABLE idempotency_keys;
CREATE TABLE idempotency_keys (
    owner_id uuid NOT NULL,
    key text NOT NULL,
    request_hash bytea NOT NULL,
    state text NOT NULL CHECK (state IN ('running', 'done')),
    status smallint,
    response jsonb,
    created_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (owner_id, key)
);
CREATE INDEX idempotency_keys_created ON idempotency_keys (created_at);
