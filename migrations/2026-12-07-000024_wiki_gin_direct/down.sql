ALTER INDEX wiki_entries_search RESET (fastupdate);
ALTER INDEX wiki_entries_alias_terms RESET (fastupdate);
ALTER INDEX wiki_entries_tags RESET (fastupdate);
