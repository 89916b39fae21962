-- What a person approved is what went out (issue 29, section 4), and when an agent is silent.

-- The approval a post carries: the fingerprint of its body as report matching normalizes it,
-- the body, its media's content hashes in order and its characters, as the last approval
-- (internal or client) pinned them. NULL: never approved.
ALTER TABLE posts ADD COLUMN approved_pin jsonb;
-- Set when an agent reported the post published with another body than the approved one, or
-- published a post nobody approved: both texts and why. Never refused; people are told.
ALTER TABLE posts ADD COLUMN published_differs jsonb;

-- People's `GET /today` lists a workspace's recent differing posts.
CREATE INDEX posts_published_differs ON posts (workspace_id, published_at DESC)
    WHERE published_differs IS NOT NULL;

-- How long an agent may go without a heartbeat before it is silent (the tenant file states
-- it; 24 hours by default), and when it was last told silent (`agent.silent`, once per
-- silence).
ALTER TABLE agents ADD COLUMN silent_after_hours smallint NOT NULL DEFAULT 24
    CHECK (silent_after_hours BETWEEN 1 AND 168);
ALTER TABLE agents ADD COLUMN silent_told_at timestamptz;
