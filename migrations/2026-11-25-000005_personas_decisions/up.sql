-- Personas and the human decisions: what people decide about a persona, what waits for them,
-- and the task cards their follow-ups open.

-- A persona an agent creates waits for a person (`pending`) until confirmed; a dismissed one is
-- `retired`: hidden from agents, its name free again in its project.
ALTER TABLE personas
    ADD COLUMN status text NOT NULL DEFAULT 'confirmed'
        CHECK (status IN ('pending', 'confirmed', 'retired')),
    -- Lists set by people (the tenant file): how the persona speaks, what it never says.
    ADD COLUMN speech_rules text[] NOT NULL DEFAULT '{}',
    ADD COLUMN forbidden text[] NOT NULL DEFAULT '{}',
    ADD COLUMN created_by_agent uuid REFERENCES agents(id),
    ADD COLUMN retired_at timestamptz;
ALTER TABLE personas DROP CONSTRAINT personas_project_id_name_key;
CREATE UNIQUE INDEX personas_live_name ON personas (project_id, name) WHERE status <> 'retired';

-- Facts: decided by a person (`decided`), proposed by an agent and waiting (`draft`), refused,
-- or replaced by a later decision of the same category and label.
ALTER TABLE persona_facts
    ADD COLUMN status text NOT NULL DEFAULT 'decided'
        CHECK (status IN ('draft', 'decided', 'refused', 'replaced')),
    ADD COLUMN detail text,
    ADD COLUMN post_id uuid REFERENCES posts(id),
    ADD COLUMN proposed_by_agent uuid REFERENCES agents(id),
    ADD COLUMN decision_id uuid REFERENCES decisions(id),
    ADD COLUMN decided_at timestamptz,
    DROP COLUMN by_decision;
ALTER TABLE persona_facts DROP CONSTRAINT persona_facts_persona_id_category_label_key;
CREATE UNIQUE INDEX persona_facts_decided ON persona_facts (persona_id, category, label)
    WHERE status = 'decided';
CREATE INDEX persona_facts_persona ON persona_facts (persona_id, status);

-- Reference images of a persona (and of its cast): `draft` until a person approves them.
CREATE TABLE persona_images (
    id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    persona_id uuid NOT NULL REFERENCES personas(id),
    sha256 text NOT NULL,
    mime_type text NOT NULL CHECK (mime_type IN ('image/jpeg', 'image/png', 'image/webp')),
    bytes bigint NOT NULL,
    width integer NOT NULL,
    height integer NOT NULL,
    storage_key text NOT NULL,
    thumb_key text NOT NULL,
    thumb_mime text NOT NULL,
    category text NOT NULL CHECK (category IN ('turnaround', 'portrait', 'avatar', 'pet', 'home',
        'workplace', 'belongings', 'photo_style', 'other')),
    caption text,
    -- How the image was made: internal, never shown to clients.
    prompt text,
    character text,
    lock text NOT NULL DEFAULT 'draft' CHECK (lock IN ('draft', 'approved', 'refused')),
    decision_id uuid REFERENCES decisions(id),
    uploaded_by_agent uuid REFERENCES agents(id),
    decided_at timestamptz,
    created_at timestamptz NOT NULL DEFAULT now(),
    UNIQUE (persona_id, sha256)
);
CREATE INDEX persona_images_listing ON persona_images (persona_id, lock, created_at);
CREATE INDEX persona_images_decision ON persona_images (decision_id);

-- Task cards, as far as the follow-ups of decisions need them (the task endpoints come later).
CREATE TABLE task_cards (
    id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    organization_id uuid NOT NULL REFERENCES organizations(id),
    workspace_id uuid NOT NULL REFERENCES workspaces(id),
    persona_id uuid REFERENCES personas(id),
    kind text NOT NULL CHECK (kind IN ('write_posts', 'change_avatar', 'change_bio', 'delete_post',
        'pause_account', 'resume_account', 'export_data', 'other')),
    title text NOT NULL,
    detail text,
    status text NOT NULL DEFAULT 'pending_pickup' CHECK (status IN ('pending_pickup', 'in_progress',
        'pending_confirmation', 'done', 'failed', 'cancelled')),
    target_type text NOT NULL CHECK (target_type IN ('slot', 'persona', 'post', 'issue')),
    target_code text,
    target_id uuid,
    assignee_agent uuid REFERENCES agents(id),
    opened_by_type text NOT NULL CHECK (opened_by_type IN ('agent', 'person', 'service')),
    opened_by_name text NOT NULL,
    also_wanted_by text[] NOT NULL DEFAULT '{}',
    -- The decision whose follow-up this card is.
    decision_id uuid REFERENCES decisions(id),
    due_at timestamptz,
    notes jsonb NOT NULL DEFAULT '[]',
    result text,
    evidence jsonb NOT NULL DEFAULT '[]',
    last_progress_at timestamptz,
    confirmation_since timestamptz,
    created_at timestamptz NOT NULL DEFAULT now(),
    updated_at timestamptz NOT NULL DEFAULT now(),
    finished_at timestamptz
);
CREATE INDEX task_cards_assignee ON task_cards (assignee_agent, status);
CREATE INDEX task_cards_persona ON task_cards (persona_id, status);
CREATE INDEX task_cards_workspace ON task_cards (workspace_id, status, created_at);
CREATE UNIQUE INDEX task_cards_decision ON task_cards (decision_id) WHERE decision_id IS NOT NULL;

-- Decisions: who opened them, the post or card they concern, the person's move and its notes,
-- and what an agent reported when it handled a follow-up.
ALTER TABLE decisions
    ADD COLUMN post_id uuid REFERENCES posts(id),
    ADD COLUMN task_id uuid REFERENCES task_cards(id),
    -- The decision a follow-up came from.
    ADD COLUMN parent_id uuid REFERENCES decisions(id),
    ADD COLUMN opened_by_type text NOT NULL DEFAULT 'agent'
        CHECK (opened_by_type IN ('agent', 'person', 'service')),
    -- A person's name; an agent's is read from `opened_by_agent`, the service's is fleetdesk.
    ADD COLUMN opened_by_person text,
    ADD COLUMN notes jsonb NOT NULL DEFAULT '[]',
    -- The move that decided it (`{"action", "option", ...}`), so that the same move resent
    -- answers `unchanged`; who made it (a person, or a person through an agent's relay).
    ADD COLUMN decided_move jsonb,
    ADD COLUMN decided_by jsonb,
    ADD COLUMN decided_at timestamptz,
    ADD COLUMN result text,
    ADD COLUMN evidence jsonb NOT NULL DEFAULT '[]',
    ADD COLUMN handled_at timestamptz;
UPDATE decisions SET opened_by_type = 'service' WHERE opened_by_agent IS NULL;
CREATE INDEX decisions_listing ON decisions (organization_id, created_at DESC, id);
-- One open decision per persona gathers every image awaiting approval.
CREATE UNIQUE INDEX decisions_open_images ON decisions (persona_id)
    WHERE kind = 'persona_images' AND status = 'open';

-- The media library's images get a real small thumbnail, made once and stored.
ALTER TABLE media
    ADD COLUMN thumb_key text,
    ADD COLUMN thumb_mime text;
