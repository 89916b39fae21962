DROP INDEX community_tickets_of_agent;
DROP INDEX community_tickets_listed;
ALTER TABLE community_tickets
    DROP COLUMN handled_at,
    DROP COLUMN handled_by,
    DROP COLUMN handled_note;
UPDATE community_tickets SET status = 'closed' WHERE status <> 'open';
ALTER TABLE community_tickets DROP CONSTRAINT community_tickets_status_check;
ALTER TABLE community_tickets ADD CONSTRAINT community_tickets_status_check
    CHECK (status IN ('open', 'closed'));
