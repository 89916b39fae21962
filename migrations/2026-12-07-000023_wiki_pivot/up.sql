-- Cross-language search: an entry also stores the English its Chinese words mean
-- (`fleetdesk_wiki::search::pivot`): the title's, summary's and tags' in `terms_pivot`
-- (weight C), the body's after the body's own terms (D). `terms_version` says which pipeline
-- wrote an entry's terms (`fleetdesk_wiki::entry::TERMS_VERSION`); the entries stored before
-- this migration (version 1) are indexed again by the service when it starts.
--
-- A glossary entry's synonyms (`fleetdesk_wiki::aliases`: lines like `A醇 = 视黄醇`), each
-- group as the domain encodes it, and their terms, which a search looks them up by.
ALTER TABLE wiki_entries
    ADD COLUMN terms_pivot text NOT NULL DEFAULT '',
    ADD COLUMN terms_version smallint NOT NULL DEFAULT 1,
    ADD COLUMN aliases text[] NOT NULL DEFAULT '{}',
    ADD COLUMN alias_terms text[] NOT NULL DEFAULT '{}';
CREATE INDEX wiki_entries_alias_terms ON wiki_entries USING gin (alias_terms)
    WHERE alias_terms <> '{}';

-- The synonyms a tenant file declares for an organization (`wiki_synonyms`), stored as the
-- glossary's are.
ALTER TABLE organizations
    ADD COLUMN wiki_aliases text[] NOT NULL DEFAULT '{}',
    ADD COLUMN wiki_alias_terms text[] NOT NULL DEFAULT '{}';

DROP INDEX wiki_entries_search;
ALTER TABLE wiki_entries DROP COLUMN search;
ALTER TABLE wiki_entries ADD COLUMN search tsvector GENERATED ALWAYS AS (
    setweight(to_tsvector('simple', terms_title), 'A')
    || setweight(to_tsvector('simple', terms_summary), 'B')
    || setweight(to_tsvector('simple', terms_pivot), 'C')
    || setweight(to_tsvector('simple', terms_body), 'D')
) STORED;
CREATE INDEX wiki_entries_search ON wiki_entries USING gin (search);
