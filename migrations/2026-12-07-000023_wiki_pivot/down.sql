ALTER TABLE organizations DROP COLUMN wiki_aliases, DROP COLUMN wiki_alias_terms;
DROP INDEX wiki_entries_search;
ALTER TABLE wiki_entries DROP COLUMN search;
DROP INDEX wiki_entries_alias_terms;
ALTER TABLE wiki_entries DROP COLUMN terms_pivot, DROP COLUMN terms_version,
    DROP COLUMN aliases, DROP COLUMN alias_terms;
ALTER TABLE wiki_entries ADD COLUMN search tsvector GENERATED ALWAYS AS (
    setweight(to_tsvector('simple', terms_title), 'A')
    || setweight(to_tsvector('simple', terms_summary), 'B')
    || setweight(to_tsvector('simple', terms_body), 'D')
) STORED;
CREATE INDEX wiki_entries_search ON wiki_entries USING gin (search);
