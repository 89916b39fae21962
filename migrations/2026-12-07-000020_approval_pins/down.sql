ALTER TABLE agents DROP COLUMN silent_told_at;
ALTER TABLE agents DROP COLUMN silent_after_hours;
DROP INDEX posts_published_differs;
ALTER TABLE posts DROP COLUMN published_differs;
ALTER TABLE posts DROP COLUMN approved_pin;
