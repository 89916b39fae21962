-- Revisions of what agents read most, per workspace, raised in the same transaction as every
-- committed change to what they cover. Authentication reads them with the key, so an instance
-- answers from what it built before as long as the revision has not moved
-- (fleetdesk_api::revisioned, docs/decisions.md "Kept answers"):
-- - accounts_revision: GET /accounts (account_slots, the live account_generations, the
--   personas' names and agents);
-- - tasks_revision: the open task cards a heartbeat answers with (task_cards, and the
--   personas' agents, who see the unassigned cards of their personas).
--
-- Triggers, not the write paths, keep it: a write path that forgot it would serve a stale list
-- with no test to notice, and a trigger also sees the tenant file and hand-made changes. They
-- are statement triggers over the changed rows (one UPDATE of workspaces per statement,
-- however many rows it wrote), and an UPDATE raises the revision only where a listed column
-- changed, so an avatar or a retired persona's text leaves the cached list alone.
ALTER TABLE workspaces ADD COLUMN accounts_revision bigint NOT NULL DEFAULT 0,
                       ADD COLUMN tasks_revision bigint NOT NULL DEFAULT 0;

CREATE FUNCTION account_list_changed(workspace_ids uuid[]) RETURNS void
LANGUAGE sql AS $$
    UPDATE workspaces SET accounts_revision = accounts_revision + 1
    WHERE id = ANY (workspace_ids)
$$;

CREATE FUNCTION open_cards_changed(workspace_ids uuid[]) RETURNS void
LANGUAGE sql AS $$
    UPDATE workspaces SET tasks_revision = tasks_revision + 1
    WHERE id = ANY (workspace_ids)
$$;

-- account_slots: every column but created_at and organization_id is in the list.
CREATE FUNCTION account_slots_changed() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        PERFORM account_list_changed(ARRAY(SELECT DISTINCT workspace_id FROM new_rows));
    ELSIF TG_OP = 'DELETE' THEN
        PERFORM account_list_changed(ARRAY(SELECT DISTINCT workspace_id FROM old_rows));
    ELSE
        PERFORM account_list_changed(ARRAY(
            SELECT o.workspace_id FROM old_rows o JOIN new_rows n ON n.id = o.id
            WHERE (o.workspace_id, o.persona_id, o.code, o.legacy_code, o.platform, o.market,
                   o.timezone, o.handle, o.daily_target, o.publishing)
                IS DISTINCT FROM
                  (n.workspace_id, n.persona_id, n.code, n.legacy_code, n.platform, n.market,
                   n.timezone, n.handle, n.daily_target, n.publishing)
            UNION
            SELECT n.workspace_id FROM old_rows o JOIN new_rows n ON n.id = o.id
            WHERE o.workspace_id IS DISTINCT FROM n.workspace_id));
    END IF;
    RETURN NULL;
END
$$;

CREATE TRIGGER account_slots_inserted AFTER INSERT ON account_slots
    REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION account_slots_changed();
CREATE TRIGGER account_slots_updated AFTER UPDATE ON account_slots
    REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION account_slots_changed();
CREATE TRIGGER account_slots_deleted AFTER DELETE ON account_slots
    REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION account_slots_changed();

-- account_generations: the list shows the live generation's id, number and state.
CREATE FUNCTION account_generations_changed() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        PERFORM account_list_changed(ARRAY(
            SELECT DISTINCT s.workspace_id FROM new_rows n JOIN account_slots s ON s.id = n.slot_id));
    ELSIF TG_OP = 'DELETE' THEN
        PERFORM account_list_changed(ARRAY(
            SELECT DISTINCT s.workspace_id FROM old_rows o JOIN account_slots s ON s.id = o.slot_id));
    ELSE
        PERFORM account_list_changed(ARRAY(
            SELECT s.workspace_id FROM old_rows o JOIN new_rows n ON n.id = o.id
            JOIN account_slots s ON s.id IN (o.slot_id, n.slot_id)
            WHERE (o.slot_id, o.generation, o.state, o.closed_at)
                IS DISTINCT FROM (n.slot_id, n.generation, n.state, n.closed_at)));
    END IF;
    RETURN NULL;
END
$$;

CREATE TRIGGER account_generations_inserted AFTER INSERT ON account_generations
    REFERENCING NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION account_generations_changed();
CREATE TRIGGER account_generations_updated AFTER UPDATE ON account_generations
    REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION account_generations_changed();
CREATE TRIGGER account_generations_deleted AFTER DELETE ON account_generations
    REFERENCING OLD TABLE AS old_rows
    FOR EACH STATEMENT EXECUTE FUNCTION account_generations_changed();

-- personas: the list shows the persona's name and holds the accounts of the agent it is
-- assigned to (a persona without accounts changes no list); an agent's open cards include the
-- unassigned cards of its personas.
CREATE FUNCTION personas_changed() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    PERFORM account_list_changed(ARRAY(
        SELECT s.workspace_id FROM old_rows o JOIN new_rows n ON n.id = o.id
        JOIN account_slots s ON s.persona_id = n.id
        WHERE (o.name, o.agent_id) IS DISTINCT FROM (n.name, n.agent_id)));
    PERFORM open_cards_changed(ARRAY(
        SELECT n.workspace_id FROM old_rows o JOIN new_rows n ON n.id = o.id
        WHERE o.agent_id IS DISTINCT FROM n.agent_id));
    RETURN NULL;
END
$$;

CREATE TRIGGER personas_updated AFTER UPDATE ON personas
    REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION personas_changed();

-- task_cards: an open card shows its id, kind, title and status, and its flags come from its
-- due date, progress and confirmation times; which agent sees it, from its assignee and
-- persona. Notes, results and evidence change no heartbeat.
CREATE FUNCTION task_cards_changed() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        PERFORM open_cards_changed(ARRAY(SELECT DISTINCT workspace_id FROM new_rows));
    ELSIF TG_OP = 'DELETE' THEN
        PERFORM open_cards_changed(ARRAY(SELECT DISTINCT workspace_id FROM old_rows));
    ELSE
        PERFORM open_cards_changed(ARRAY(
            SELECT unnest(ARRAY[o.workspace_id, n.workspace_id])
            FROM old_rows o JOIN new_rows n ON n.id = o.id
            WHERE (o.workspace_id, o.persona_id, o.kind, o.title, o.status, o.assignee_agent,
                   o.due_at, o.last_progress_at, o.confirmation_since, o.created_at)
                IS DISTINCT FROM
                  (n.workspace_id, n.persona_id, n.kind, n.title, n.status, n.assignee_agent,
                   n.due_at, n.last_progress_at, n.confirmation_since, n.created_at)));
    END IF;
    RETURN NULL;
END
$$;

CREATE TRIGGER task_cards_inserted AFTER INSERT ON task_cards
    REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION task_cards_changed();
CREATE TRIGGER task_cards_updated AFTER UPDATE ON task_cards
    REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION task_cards_changed();
CREATE TRIGGER task_cards_deleted AFTER DELETE ON task_cards
    REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION task_cards_changed();
