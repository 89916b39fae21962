-- The knowledge base (wiki entries, their versions, sources and sync runs) and the community
-- assistant (spaces, products, digests, tickets).

-- How an organization's wiki proposals land: canon at once (`auto`) or as drafts a person
-- reviews through a `wiki_draft` decision (`manual`).
ALTER TABLE organizations
    ADD COLUMN wiki_review text NOT NULL DEFAULT 'auto' CHECK (wiki_review IN ('auto', 'manual'));

-- One entry per title within its scope: a project, or the whole organization (project null).
-- The row shows the entry's current version: the canon one when there is one.
CREATE TABLE wiki_entries (
    id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    organization_id uuid NOT NULL REFERENCES organizations(id),
    project_id uuid REFERENCES projects(id),
    -- The title as matched, folded by the domain (case, width, script).
    title_key text NOT NULL,
    title text NOT NULL,
    category text NOT NULL CHECK (category IN ('worldview', 'character', 'voice', 'format',
        'audience', 'strategy', 'playbook', 'lesson', 'glossary', 'other')),
    summary text NOT NULL DEFAULT '',
    body text NOT NULL,
    tags text[] NOT NULL DEFAULT '{}',
    -- The tags as matched (`fleetdesk_wiki::entry::fold_tag`: trimmed, lower case), written
    -- by the domain beside `tags`; the community assistant's axis filter reads them.
    folded_tags text[] NOT NULL DEFAULT '{}',
    sources jsonb NOT NULL DEFAULT '[]',
    version integer NOT NULL,
    status text NOT NULL CHECK (status IN ('canon', 'draft', 'rejected', 'retired')),
    -- Search terms the domain prepared (segmented, simplified, folded, stemmed), separated by
    -- spaces, so PostgreSQL's `simple` configuration only splits and stores them.
    terms_title text NOT NULL DEFAULT '',
    terms_summary text NOT NULL DEFAULT '',
    terms_body text NOT NULL DEFAULT '',
    search tsvector GENERATED ALWAYS AS (
        setweight(to_tsvector('simple', terms_title), 'A')
        || setweight(to_tsvector('simple', terms_summary), 'B')
        || setweight(to_tsvector('simple', terms_body), 'D')
    ) STORED,
    created_by_agent uuid REFERENCES agents(id),
    created_at timestamptz NOT NULL DEFAULT now(),
    updated_at timestamptz NOT NULL DEFAULT now()
);
CREATE UNIQUE INDEX wiki_entries_title ON wiki_entries (organization_id, project_id, title_key)
    NULLS NOT DISTINCT WHERE status <> 'retired';
CREATE INDEX wiki_entries_list ON wiki_entries (organization_id, status, created_at, id);
CREATE INDEX wiki_entries_search ON wiki_entries USING gin (search);
CREATE INDEX wiki_entries_tags ON wiki_entries USING gin (folded_tags);

-- Every proposal is a version; a draft revision of a canon entry waits here while the entry
-- keeps showing its canon text.
CREATE TABLE wiki_versions (
    id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    entry_id uuid NOT NULL REFERENCES wiki_entries(id),
    version integer NOT NULL,
    category text NOT NULL,
    title text NOT NULL,
    summary text NOT NULL DEFAULT '',
    body text NOT NULL,
    tags text[] NOT NULL DEFAULT '{}',
    sources jsonb NOT NULL DEFAULT '[]',
    note text,
    status text NOT NULL CHECK (status IN ('canon', 'draft', 'rejected', 'superseded')),
    proposed_by_agent uuid REFERENCES agents(id),
    decision_id uuid REFERENCES decisions(id),
    decided_at timestamptz,
    created_at timestamptz NOT NULL DEFAULT now(),
    UNIQUE (entry_id, version)
);
CREATE INDEX wiki_versions_decision ON wiki_versions (decision_id) WHERE decision_id IS NOT NULL;

-- Sources an agent syncs into the knowledge base: optionally of a project and assigned to one
-- agent (unassigned: any agent of the workspace).
ALTER TABLE wiki_sources
    ADD CONSTRAINT wiki_sources_kind CHECK (kind IN ('vault', 'notion', 'post', 'review', 'agent',
        'person', 'other')),
    ADD COLUMN project_id uuid REFERENCES projects(id),
    ADD COLUMN agent_id uuid REFERENCES agents(id),
    ADD COLUMN scope_note text,
    ADD COLUMN last_run_at timestamptz,
    ADD COLUMN last_status text CHECK (last_status IN ('success', 'partial', 'failed')),
    ADD COLUMN cursor text;

CREATE TABLE wiki_sync_runs (
    id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    source_id uuid NOT NULL REFERENCES wiki_sources(id),
    agent_id uuid NOT NULL REFERENCES agents(id),
    status text NOT NULL CHECK (status IN ('success', 'partial', 'failed')),
    summary text,
    read integer NOT NULL DEFAULT 0,
    created integer NOT NULL DEFAULT 0,
    revised integer NOT NULL DEFAULT 0,
    unchanged integer NOT NULL DEFAULT 0,
    skipped integer NOT NULL DEFAULT 0,
    cursor text,
    created_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX wiki_sync_runs_source ON wiki_sync_runs (source_id, created_at);

-- Community spaces: archived ones answer 404.
ALTER TABLE community_spaces
    ADD CONSTRAINT community_spaces_status CHECK (status IN ('active', 'archived'));

-- The catalog the community assistant quotes from; searched like the wiki.
ALTER TABLE products
    ADD COLUMN summary text,
    ADD COLUMN price text,
    ADD COLUMN url text,
    ADD COLUMN terms text NOT NULL DEFAULT '',
    ADD COLUMN search tsvector GENERATED ALWAYS AS (to_tsvector('simple', terms)) STORED;
CREATE INDEX products_search ON products USING gin (search);

-- One digest per space and day (the space's zone).
CREATE TABLE community_digests (
    id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    space_id uuid NOT NULL REFERENCES community_spaces(id),
    day date NOT NULL,
    agent_id uuid NOT NULL REFERENCES agents(id),
    members integer NOT NULL,
    skipped integer NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now(),
    UNIQUE (space_id, day)
);

CREATE TABLE community_digest_members (
    digest_id uuid NOT NULL REFERENCES community_digests(id),
    external_id text NOT NULL,
    display_name text,
    message_count integer NOT NULL CHECK (message_count BETWEEN 0 AND 10000),
    summary text,
    -- [{kind: interest|intent, value, confidence}]
    tags jsonb NOT NULL DEFAULT '[]',
    PRIMARY KEY (digest_id, external_id)
);

CREATE TABLE community_tickets (
    id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    space_id uuid NOT NULL REFERENCES community_spaces(id),
    member_external_id text,
    category text NOT NULL CHECK (category IN ('complaint', 'refund', 'order', 'data_deletion',
        'abuse', 'unanswered', 'other')),
    summary text NOT NULL,
    -- [{text, at}]: summaries of later reports of the same matter.
    notes jsonb NOT NULL DEFAULT '[]',
    status text NOT NULL DEFAULT 'open' CHECK (status IN ('open', 'closed')),
    opened_by_agent uuid NOT NULL REFERENCES agents(id),
    created_at timestamptz NOT NULL DEFAULT now(),
    updated_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX community_tickets_open ON community_tickets (space_id, member_external_id, category,
    created_at) WHERE status = 'open';
