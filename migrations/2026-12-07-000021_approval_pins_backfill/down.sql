-- The backfill's pins cannot be told apart from those approvals made: nothing to undo.
SELECT 1;
