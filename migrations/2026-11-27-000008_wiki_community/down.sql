DROP TABLE community_tickets;
DROP TABLE community_digest_members;
DROP TABLE community_digests;
DROP INDEX products_search;
ALTER TABLE products DROP COLUMN search, DROP COLUMN terms, DROP COLUMN url, DROP COLUMN price,
    DROP COLUMN summary;
ALTER TABLE community_spaces DROP CONSTRAINT community_spaces_status;
DROP TABLE wiki_sync_runs;
ALTER TABLE wiki_sources DROP CONSTRAINT wiki_sources_kind, DROP COLUMN project_id,
    DROP COLUMN agent_id, DROP COLUMN scope_note, DROP COLUMN last_run_at,
    DROP COLUMN last_status, DROP COLUMN cursor;
DROP TABLE wiki_versions;
DROP TABLE wiki_entries;
ALTER TABLE organizations DROP COLUMN wiki_review;
