-- Tenancy: organizations, workspaces, projects, people, members, agents, keys.

CREATE TABLE organizations (
    id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    name text NOT NULL UNIQUE,
    monthly_credit_limit bigint NOT NULL DEFAULT 0,
    created_at timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE workspaces (
    id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    organization_id uuid NOT NULL REFERENCES organizations(id),
    name text NOT NULL,
    client_review boolean NOT NULL DEFAULT false,
    ads_enabled boolean NOT NULL DEFAULT false,
    archived_at timestamptz,
    created_at timestamptz NOT NULL DEFAULT now(),
    UNIQUE (organization_id, name)
);

CREATE TABLE projects (
    id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    workspace_id uuid NOT NULL REFERENCES workspaces(id),
    name text NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now(),
    UNIQUE (workspace_id, name)
);

-- A person who can log in; members tie people to organizations with a role.
CREATE TABLE people (
    id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    email text NOT NULL UNIQUE,
    name text NOT NULL,
    platform_admin boolean NOT NULL DEFAULT false,
    setup_complete boolean NOT NULL DEFAULT true,
    created_at timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE members (
    id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    organization_id uuid NOT NULL REFERENCES organizations(id),
    person_id uuid NOT NULL REFERENCES people(id),
    role text NOT NULL CHECK (role IN ('client', 'agency')),
    review boolean NOT NULL DEFAULT false,
    left_at timestamptz,
    created_at timestamptz NOT NULL DEFAULT now(),
    UNIQUE (organization_id, person_id)
);

CREATE TABLE agents (
    id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    workspace_id uuid NOT NULL REFERENCES workspaces(id),
    name text NOT NULL,
    role text NOT NULL CHECK (role IN ('operator', 'community')),
    created_at timestamptz NOT NULL DEFAULT now(),
    UNIQUE (workspace_id, name)
);

-- Only the lookup id and a SHA-256 of the whole key are stored.
CREATE TABLE api_keys (
    id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    kind text NOT NULL CHECK (kind IN ('agent', 'user')),
    lookup text NOT NULL UNIQUE,
    secret_hash bytea NOT NULL,
    agent_id uuid REFERENCES agents(id),
    person_id uuid REFERENCES people(id),
    -- Personal keys are bound to one organization (platform admins' may be bound to none).
    organization_id uuid REFERENCES organizations(id),
    created_at timestamptz NOT NULL DEFAULT now(),
    last_used_at timestamptz,
    revoked_at timestamptz,
    CHECK ((kind = 'agent') = (agent_id IS NOT NULL)),
    CHECK ((kind = 'user') = (person_id IS NOT NULL))
);
CREATE INDEX api_keys_valid_personal ON api_keys (person_id, organization_id) WHERE revoked_at IS NULL;
CREATE INDEX api_keys_valid_agent ON api_keys (agent_id) WHERE revoked_at IS NULL;

-- Per-key per-minute counters, shared by every running instance.
CREATE TABLE rate_windows (
    key_id uuid NOT NULL,
    window_start timestamptz NOT NULL,
    hits integer NOT NULL,
    PRIMARY KEY (key_id, window_start)
);

-- Idempotency-Key claims and stored first results, per agent or person, for 24 hours.
CREATE TABLE idempotency_keys (
    owner_id uuid NOT NULL,
    key text NOT NULL,
    request_hash bytea NOT NULL,
    state text NOT NULL CHECK (state IN ('running', 'done')),
    status smallint,
    response jsonb,
    created_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (owner_id, key)
);
CREATE INDEX idempotency_keys_created ON idempotency_keys (created_at);

-- Personas and what the tenant file sets up for them.

CREATE TABLE personas (
    id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    workspace_id uuid NOT NULL REFERENCES workspaces(id),
    project_id uuid NOT NULL REFERENCES projects(id),
    agent_id uuid REFERENCES agents(id),
    name text NOT NULL,
    track text,
    background text,
    bio text,
    voice text,
    created_at timestamptz NOT NULL DEFAULT now(),
    UNIQUE (project_id, name)
);
CREATE INDEX personas_agent ON personas (agent_id);

CREATE TABLE persona_cast (
    persona_id uuid NOT NULL REFERENCES personas(id),
    code text NOT NULL,
    name text NOT NULL,
    summary text,
    PRIMARY KEY (persona_id, code)
);

CREATE TABLE persona_facts (
    id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    persona_id uuid NOT NULL REFERENCES personas(id),
    category text NOT NULL,
    label text NOT NULL,
    value text NOT NULL,
    by_decision boolean NOT NULL DEFAULT true,
    created_at timestamptz NOT NULL DEFAULT now(),
    UNIQUE (persona_id, category, label)
);

-- Accounts: a slot is the code; a generation is one live account behind it.

CREATE TABLE account_slots (
    id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    organization_id uuid NOT NULL REFERENCES organizations(id),
    workspace_id uuid NOT NULL REFERENCES workspaces(id),
    persona_id uuid NOT NULL REFERENCES personas(id),
    code text NOT NULL,
    legacy_code text,
    platform text NOT NULL CHECK (platform IN ('threads', 'tiktok', 'x', 'facebook', 'instagram', 'reddit')),
    market text NOT NULL,
    timezone text NOT NULL,
    handle text,
    daily_target integer NOT NULL DEFAULT 1,
    publishing text NOT NULL DEFAULT 'agent' CHECK (publishing IN ('agent', 'fleetdesk')),
    created_at timestamptz NOT NULL DEFAULT now(),
    UNIQUE (organization_id, platform, code)
);
CREATE INDEX account_slots_code ON account_slots (workspace_id, code);
CREATE INDEX account_slots_legacy ON account_slots (workspace_id, legacy_code) WHERE legacy_code IS NOT NULL;
CREATE INDEX account_slots_persona ON account_slots (persona_id);

CREATE TABLE account_generations (
    id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    slot_id uuid NOT NULL REFERENCES account_slots(id),
    generation integer NOT NULL,
    state text NOT NULL CHECK (state IN ('warming', 'active', 'banned', 'quarantined', 'paused', 'replaced')),
    onboarded_at date,
    avatar_sha256 text,
    avatar_mime text,
    avatar_bytes bigint,
    avatar_width integer,
    avatar_height integer,
    avatar_key text,
    avatar_updated_at timestamptz,
    opened_at timestamptz NOT NULL DEFAULT now(),
    closed_at timestamptz,
    UNIQUE (slot_id, generation)
);
-- At most one live generation per code.
CREATE UNIQUE INDEX account_generations_live ON account_generations (slot_id) WHERE closed_at IS NULL;

CREATE TABLE account_state_changes (
    id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    generation_id uuid NOT NULL REFERENCES account_generations(id),
    from_state text NOT NULL,
    to_state text NOT NULL,
    reported text NOT NULL,
    reason text,
    occurred_at timestamptz NOT NULL,
    agent_id uuid REFERENCES agents(id),
    origin jsonb,
    created_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX account_state_changes_generation ON account_state_changes (generation_id, created_at);

-- Pending decisions: what waits for a person.
CREATE TABLE decisions (
    id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    organization_id uuid NOT NULL REFERENCES organizations(id),
    workspace_id uuid NOT NULL REFERENCES workspaces(id),
    kind text NOT NULL,
    status text NOT NULL DEFAULT 'open' CHECK (status IN ('open', 'handled', 'resolved', 'dismissed')),
    persona_id uuid REFERENCES personas(id),
    slot_id uuid REFERENCES account_slots(id),
    generation_id uuid REFERENCES account_generations(id),
    title text NOT NULL,
    question text,
    options jsonb NOT NULL DEFAULT '[]',
    detail jsonb NOT NULL DEFAULT '{}',
    opened_by_agent uuid REFERENCES agents(id),
    created_at timestamptz NOT NULL DEFAULT now(),
    updated_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX decisions_open ON decisions (workspace_id, status, created_at);

-- Heartbeats: one record per agent and run_id.
CREATE TABLE agent_runs (
    id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    agent_id uuid NOT NULL REFERENCES agents(id),
    run_id text NOT NULL,
    summary text,
    counts jsonb NOT NULL DEFAULT '{}',
    recorded_at timestamptz NOT NULL DEFAULT now(),
    created_at timestamptz NOT NULL DEFAULT now(),
    UNIQUE (agent_id, run_id)
);

-- Set up by the tenant file now, used by later parts of the interface.
CREATE TABLE community_spaces (
    id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    workspace_id uuid NOT NULL REFERENCES workspaces(id),
    name text NOT NULL,
    channel text NOT NULL CHECK (channel IN ('whatsapp', 'discord')),
    external_id text NOT NULL,
    space_type text,
    market text NOT NULL DEFAULT 'TW',
    track text,
    location text,
    language text,
    status text NOT NULL DEFAULT 'active',
    created_at timestamptz NOT NULL DEFAULT now(),
    UNIQUE (channel, external_id)
);

CREATE TABLE products (
    id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    workspace_id uuid NOT NULL REFERENCES workspaces(id),
    name text NOT NULL,
    on_sale boolean NOT NULL DEFAULT false,
    created_at timestamptz NOT NULL DEFAULT now(),
    UNIQUE (workspace_id, name)
);

CREATE TABLE wiki_sources (
    id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    workspace_id uuid NOT NULL REFERENCES workspaces(id),
    kind text NOT NULL,
    name text NOT NULL,
    locator text NOT NULL,
    every_hours integer NOT NULL DEFAULT 24,
    created_at timestamptz NOT NULL DEFAULT now(),
    UNIQUE (workspace_id, name)
);
