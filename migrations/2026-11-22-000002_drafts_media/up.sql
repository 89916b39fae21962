-- Drafts and posts, their review record, the media library and uploads.

-- Secrets the service generates once and every instance shares (the link-signing key).
CREATE TABLE service_secrets (
    name text PRIMARY KEY,
    value bytea NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now()
);

-- A post: a draft until reviewed, then scheduled and published by the agent.
CREATE TABLE posts (
    id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    organization_id uuid NOT NULL REFERENCES organizations(id),
    workspace_id uuid NOT NULL REFERENCES workspaces(id),
    project_id uuid NOT NULL REFERENCES projects(id),
    persona_id uuid NOT NULL REFERENCES personas(id),
    slot_id uuid NOT NULL REFERENCES account_slots(id),
    -- The live generation when the post was written (null when there was none).
    generation_id uuid REFERENCES account_generations(id),
    agent_id uuid REFERENCES agents(id),
    status text NOT NULL CHECK (status IN ('draft', 'internal_review', 'client_review', 'approved',
        'rewrite_requested', 'sent_back', 'stocked', 'scheduled', 'publishing', 'published',
        'failed', 'cancelled', 'deleted')),
    body text NOT NULL,
    topic text,
    sponsored boolean NOT NULL DEFAULT false,
    planned_at timestamptz,
    -- [{code, name, pov}], main character first.
    characters jsonb NOT NULL DEFAULT '[]',
    -- Sent back or asked to rewrite and not answered yet.
    awaiting_rewrite boolean NOT NULL DEFAULT false,
    rewrite_answered boolean NOT NULL DEFAULT false,
    -- The body as it was when sent back or asked to rewrite; the same body again is refused.
    returned_body text,
    returned_at timestamptz,
    stocked_at timestamptz,
    stock_reason text,
    pick text,
    created_at timestamptz NOT NULL DEFAULT now(),
    updated_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX posts_slot_status ON posts (slot_id, status);
CREATE INDEX posts_slot_body ON posts (slot_id, md5(body));
CREATE INDEX posts_workspace_status ON posts (workspace_id, status, planned_at);

-- Every review action, note, stocking and unstocking, with reason and actor.
CREATE TABLE review_events (
    id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    post_id uuid NOT NULL REFERENCES posts(id),
    action text NOT NULL,
    reason text,
    actor_kind text NOT NULL CHECK (actor_kind IN ('agent', 'member', 'service')),
    actor_id uuid,
    actor_name text NOT NULL,
    detail jsonb NOT NULL DEFAULT '{}',
    created_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX review_events_post ON review_events (post_id, id);

-- The shared media library. A file is stored once per workspace and project.
CREATE TABLE media (
    id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    workspace_id uuid NOT NULL REFERENCES workspaces(id),
    project_id uuid REFERENCES projects(id),
    persona_id uuid REFERENCES personas(id),
    character text,
    kind text NOT NULL CHECK (kind IN ('image', 'video')),
    mime_type text NOT NULL,
    bytes bigint NOT NULL,
    width integer,
    height integer,
    duration_ms bigint,
    caption text,
    tags text[] NOT NULL DEFAULT '{}',
    sha256 text NOT NULL,
    -- One object, or `parts` objects of `part_bytes` each (the last may be shorter) named
    -- `<storage_key>/<index>`.
    storage_key text NOT NULL,
    parts integer NOT NULL DEFAULT 1,
    part_bytes bigint NOT NULL,
    poster_key text,
    poster_mime text,
    source text NOT NULL CHECK (source IN ('upload', 'inline')),
    created_by_agent uuid REFERENCES agents(id),
    archived_at timestamptz,
    created_at timestamptz NOT NULL DEFAULT now()
);
CREATE UNIQUE INDEX media_same_file ON media
    (workspace_id, COALESCE(project_id, '00000000-0000-0000-0000-000000000000'::uuid), sha256)
    WHERE archived_at IS NULL;
CREATE INDEX media_listing ON media (workspace_id, created_at DESC) WHERE archived_at IS NULL;

-- The media on a post, in publishing order.
CREATE TABLE post_media (
    post_id uuid NOT NULL REFERENCES posts(id),
    media_id uuid NOT NULL REFERENCES media(id),
    position integer NOT NULL,
    PRIMARY KEY (post_id, media_id)
);
CREATE INDEX post_media_media ON post_media (media_id);

-- An upload link: single (one PUT) or chunked (in-order chunks, resumable across restarts).
CREATE TABLE uploads (
    id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    workspace_id uuid NOT NULL REFERENCES workspaces(id),
    agent_id uuid NOT NULL REFERENCES agents(id),
    slot_id uuid NOT NULL REFERENCES account_slots(id),
    project_id uuid REFERENCES projects(id),
    persona_id uuid NOT NULL REFERENCES personas(id),
    character text,
    caption text,
    tags text[] NOT NULL DEFAULT '{}',
    mode text NOT NULL CHECK (mode IN ('single', 'chunked')),
    mime_type text,
    declared_bytes bigint,
    chunks integer,
    token_hash bytea NOT NULL,
    expires_at timestamptz NOT NULL,
    -- Chunked progress: what has been acknowledged, and the content hash so far.
    next_chunk integer NOT NULL DEFAULT 0,
    received_bytes bigint NOT NULL DEFAULT 0,
    hash_state bytea,
    detected_mime text,
    poster_key text,
    poster_mime text,
    media_id uuid REFERENCES media(id),
    completed_at timestamptz,
    created_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX uploads_expires ON uploads (expires_at) WHERE completed_at IS NULL;
