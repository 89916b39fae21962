-- Each knowledge-base entry's vector by the embedding model search reorders by
-- (fleetdesk_wiki::meaning; docs/decisions.md, "Ranking by meaning"): one byte per component,
-- the entry's version it was made from and the model that made it. A background job makes the
-- missing ones; until then an entry is ranked by its words.
ALTER TABLE wiki_entries
    ADD COLUMN embedding bytea,
    ADD COLUMN embedded_version integer,
    ADD COLUMN embedding_model text;

-- The entries the job has still to embed, the least recently changed first. `retired` is
-- written here as the statement that reads the index writes it.
CREATE INDEX wiki_entries_unembedded ON wiki_entries (updated_at, id)
    WHERE embedded_version IS DISTINCT FROM version AND status <> 'retired';
