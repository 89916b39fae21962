-- People handle community tickets: resolved (the matter was handled) or dismissed (nothing to
-- do), with their note, who and when. 'closed' was never written.
ALTER TABLE community_tickets DROP CONSTRAINT community_tickets_status_check;
ALTER TABLE community_tickets ADD CONSTRAINT community_tickets_status_check
    CHECK (status IN ('open', 'resolved', 'dismissed'));
ALTER TABLE community_tickets
    ADD COLUMN handled_note text,
    ADD COLUMN handled_by jsonb,
    ADD COLUMN handled_at timestamptz;
-- The lists: a workspace's tickets by space, newest first; an agent's own.
CREATE INDEX community_tickets_listed ON community_tickets (space_id, created_at DESC, id DESC);
CREATE INDEX community_tickets_of_agent ON community_tickets (opened_by_agent, created_at DESC,
    id DESC);
