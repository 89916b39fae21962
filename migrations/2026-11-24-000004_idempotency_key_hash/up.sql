-- Idempotency-Keys are stored as their SHA-256, never in plain text: a caller may put anything
-- in the header. Records in flight keep working (their hash is computed here).
ALTER TABLE idempotency_keys ADD COLUMN key_hash bytea;
UPDATE idempotency_keys SET key_hash = sha256(convert_to(key, 'UTF8'));
ALTER TABLE idempotency_keys ALTER COLUMN key_hash SET NOT NULL;
ALTER TABLE idempotency_keys DROP CONSTRAINT idempotency_keys_pkey;
ALTER TABLE idempotency_keys DROP COLUMN key;
ALTER TABLE idempotency_keys ADD CONSTRAINT idempotency_keys_pkey PRIMARY KEY (owner_id, key_hash);
