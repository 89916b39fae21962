-- Paid ad research: quote then approve (issue 15). An organization may be suspended and has
-- its prices per item found; a workspace reads bare item ids on its marketplace.

ALTER TABLE organizations
    ADD COLUMN suspended boolean NOT NULL DEFAULT false,
    ADD COLUMN price_product_brief bigint NOT NULL DEFAULT 1 CHECK (price_product_brief >= 0),
    ADD COLUMN price_topic_keyword bigint NOT NULL DEFAULT 1 CHECK (price_topic_keyword >= 0);

ALTER TABLE workspaces
    ADD COLUMN marketplace text NOT NULL DEFAULT 'shopee' CHECK (marketplace IN
        ('shopee', 'taobao', 'tmall', '1688', 'jd', 'momo', 'pchome', 'amazon', 'rakuten', 'coupang'));

-- A request: quoted by an agent, approved on behalf of a person, then worked in the background.
CREATE TABLE ad_research (
    id uuid PRIMARY KEY,
    organization_id uuid NOT NULL REFERENCES organizations(id),
    workspace_id uuid NOT NULL REFERENCES workspaces(id),
    agent_id uuid NOT NULL REFERENCES agents(id),
    kind text NOT NULL CHECK (kind IN ('product_brief', 'topic_scout')),
    lane text,
    price bigint NOT NULL CHECK (price >= 0),
    credits_quoted bigint NOT NULL CHECK (credits_quoted >= 0),
    status text NOT NULL DEFAULT 'quoted' CHECK (status IN ('quoted', 'running', 'done')),
    created_at timestamptz NOT NULL DEFAULT now(),
    expires_at timestamptz NOT NULL,
    -- The relay record of the approval (who agreed, where, when) and its message_ref.
    approved_by jsonb,
    approved_at timestamptz,
    message_ref text,
    finished_at timestamptz,
    CHECK ((status = 'quoted') = (approved_at IS NULL))
);

CREATE INDEX ad_research_organization ON ad_research (organization_id, created_at DESC);

-- Each item of a request, and what its lookup found.
CREATE TABLE ad_research_items (
    research_id uuid NOT NULL REFERENCES ad_research(id),
    position smallint NOT NULL CHECK (position >= 0),
    organization_id uuid NOT NULL REFERENCES organizations(id),
    item text NOT NULL,
    key text NOT NULL,
    searched text NOT NULL,
    cached_at_quote boolean NOT NULL,
    outcome text CHECK (outcome IN ('found', 'not_found', 'failed', 'unqueried', 'cached')),
    card jsonb,
    error text,
    done_at timestamptz,
    PRIMARY KEY (research_id, position),
    CHECK ((outcome IS NULL) = (done_at IS NULL))
);

-- The cache: an organization's items found, by key and time.
CREATE INDEX ad_research_items_found ON ad_research_items (organization_id, key, done_at DESC)
    WHERE outcome = 'found';

-- Every credit charged, with its reason: one row per item found uncached.
CREATE TABLE ad_credit_ledger (
    id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    organization_id uuid NOT NULL REFERENCES organizations(id),
    research_id uuid NOT NULL REFERENCES ad_research(id),
    position smallint NOT NULL,
    credits bigint NOT NULL CHECK (credits >= 0),
    reason text NOT NULL,
    charged_at timestamptz NOT NULL DEFAULT now(),
    UNIQUE (research_id, position)
);

CREATE INDEX ad_credit_ledger_month ON ad_credit_ledger (organization_id, charged_at);

-- The research provider's lookups per day (UTC), counted as items are queried.
CREATE TABLE ad_research_quota (
    day date PRIMARY KEY,
    used bigint NOT NULL DEFAULT 0 CHECK (used >= 0)
);
