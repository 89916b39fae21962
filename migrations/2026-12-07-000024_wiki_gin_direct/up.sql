-- The knowledge base's GIN indexes take each write directly instead of through a pending list.
-- A pending list (GIN's fastupdate) makes a write cheaper, but every search reads all of it
-- (up to gin_pending_list_limit, 4 MB) until a vacuum or a write that overflows it merges it,
-- and the planner counts it in the index's cost: with 1.8 MB pending over 20,000 entries it
-- chose a sequential scan over the index (66 ms where the index takes 3 ms). Entries are
-- written once and searched many times; docs/decisions.md ("Cross-language search") has the
-- figures. What is pending now is merged.
ALTER INDEX wiki_entries_search SET (fastupdate = off);
ALTER INDEX wiki_entries_alias_terms SET (fastupdate = off);
ALTER INDEX wiki_entries_tags SET (fastupdate = off);
SELECT gin_clean_pending_list('wiki_entries_search'::regclass);
SELECT gin_clean_pending_list('wiki_entries_alias_terms'::regclass);
SELECT gin_clean_pending_list('wiki_entries_tags'::regclass);
