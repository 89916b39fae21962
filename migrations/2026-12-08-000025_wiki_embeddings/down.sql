DROP INDEX wiki_entries_unembedded;
ALTER TABLE wiki_entries
    DROP COLUMN embedding,
    DROP COLUMN embedded_version,
    DROP COLUMN embedding_model;
