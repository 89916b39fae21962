-- The rate limit without a write per request: each key's tokens granted by second over a
-- sliding window, leased by instances that spend them in memory (fleetdesk_tenancy::rate).
-- `counts[i]` is what was granted in the epoch second `second - i + 1` (arrays start at 1);
-- `version` makes a lease's write conditional on what it read.
CREATE TABLE rate_grants (
    key_id uuid PRIMARY KEY REFERENCES api_keys (id) ON DELETE CASCADE,
    second bigint NOT NULL,
    counts bigint[] NOT NULL,
    version bigint NOT NULL
);
DROP TABLE rate_windows;

-- Each running instance takes a number and holds a session advisory lock on it for as long as
-- it lives; an Idempotency-Key claim records the instance running its request, so a retry
-- finds the claim of a crashed instance free at once.
CREATE SEQUENCE instance_ids AS integer MINVALUE 1 CYCLE;
ALTER TABLE idempotency_keys ADD COLUMN instance integer;
