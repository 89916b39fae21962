ALTER TABLE media DROP COLUMN thumb_mime, DROP COLUMN thumb_key;
DROP INDEX decisions_open_images;
DROP INDEX decisions_listing;
ALTER TABLE decisions
    DROP COLUMN handled_at,
    DROP COLUMN evidence,
    DROP COLUMN result,
    DROP COLUMN decided_at,
    DROP COLUMN decided_by,
    DROP COLUMN decided_move,
    DROP COLUMN notes,
    DROP COLUMN opened_by_person,
    DROP COLUMN opened_by_type,
    DROP COLUMN parent_id,
    DROP COLUMN task_id,
    DROP COLUMN post_id;
DROP TABLE task_cards;
DROP TABLE persona_images;
DROP INDEX persona_facts_persona;
DROP INDEX persona_facts_decided;
DELETE FROM persona_facts WHERE status <> 'decided';
ALTER TABLE persona_facts
    ADD COLUMN by_decision boolean NOT NULL DEFAULT true,
    DROP COLUMN decided_at,
    DROP COLUMN decision_id,
    DROP COLUMN proposed_by_agent,
    DROP COLUMN post_id,
    DROP COLUMN detail,
    DROP COLUMN status;
ALTER TABLE persona_facts ADD CONSTRAINT persona_facts_persona_id_category_label_key
    UNIQUE (persona_id, category, label);
DROP INDEX personas_live_name;
-- Retired personas keep their rows (decisions and facts refer to them); their names are made
-- unique again before the constraint returns.
UPDATE personas SET name = name || ' (retired ' || id || ')' WHERE status = 'retired';
ALTER TABLE personas ADD CONSTRAINT personas_project_id_name_key UNIQUE (project_id, name);
ALTER TABLE personas
    DROP COLUMN retired_at,
    DROP COLUMN created_by_agent,
    DROP COLUMN forbidden,
    DROP COLUMN speech_rules,
    DROP COLUMN status;
