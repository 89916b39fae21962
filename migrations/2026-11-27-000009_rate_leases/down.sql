ALTER TABLE idempotency_keys DROP COLUMN instance;
DROP SEQUENCE instance_ids;
CREATE TABLE rate_windows (
    key_id uuid NOT NULL,
    window_start timestamptz NOT NULL,
    hits integer NOT NULL,
    PRIMARY KEY (key_id, window_start)
);
DROP TABLE rate_grants;
