-- Ads (issue 15): the workspace's ad accounts and monthly cap (tenant file), what the ad
-- platform's sync saw (campaigns with their daily numbers, ads), and the changes agents
-- propose and people approve. Amounts are in the ad account's currency, ordinary units.

ALTER TABLE workspaces
    ADD COLUMN monthly_ad_cap numeric(14, 2) CHECK (monthly_ad_cap >= 0),
    ADD COLUMN ad_cap_currency text CHECK (ad_cap_currency ~ '^[A-Z]{3}$'),
    ADD CHECK ((monthly_ad_cap IS NULL) = (ad_cap_currency IS NULL));

-- Named in the tenant file; the access token lives in the environment variable token_env.
CREATE TABLE ad_accounts (
    workspace_id uuid NOT NULL REFERENCES workspaces(id),
    id text NOT NULL CHECK (id ~ '^act_[0-9]{1,30}$'),
    name text NOT NULL,
    currency text NOT NULL CHECK (currency ~ '^[A-Z]{3}$'),
    token_env text NOT NULL,
    -- The Instagram account its Instagram boosts run as.
    instagram_user_id text CHECK (instagram_user_id ~ '^[0-9]{1,30}$'),
    -- As the last sync saw it.
    status text,
    synced_at timestamptz,
    sync_error text,
    PRIMARY KEY (workspace_id, id)
);

CREATE TABLE ad_campaigns (
    workspace_id uuid NOT NULL REFERENCES workspaces(id),
    id text NOT NULL,
    ad_account_id text NOT NULL,
    name text NOT NULL,
    status text NOT NULL,
    by_fleetdesk boolean NOT NULL DEFAULT false,
    synced_at timestamptz NOT NULL,
    PRIMARY KEY (workspace_id, id),
    FOREIGN KEY (workspace_id, ad_account_id) REFERENCES ad_accounts (workspace_id, id)
);

-- A campaign's numbers per day (the ad account's day), as the platform reports them.
CREATE TABLE ad_campaign_days (
    workspace_id uuid NOT NULL,
    campaign_id text NOT NULL,
    day date NOT NULL,
    spend numeric(14, 2) NOT NULL CHECK (spend >= 0),
    impressions bigint NOT NULL CHECK (impressions >= 0),
    reach bigint NOT NULL CHECK (reach >= 0),
    clicks bigint NOT NULL CHECK (clicks >= 0),
    results bigint NOT NULL CHECK (results >= 0),
    PRIMARY KEY (workspace_id, campaign_id, day),
    FOREIGN KEY (workspace_id, campaign_id) REFERENCES ad_campaigns (workspace_id, id)
);

CREATE TABLE ads (
    workspace_id uuid NOT NULL REFERENCES workspaces(id),
    id text NOT NULL,
    ad_account_id text NOT NULL,
    campaign_id text NOT NULL,
    adset_id text NOT NULL,
    name text NOT NULL,
    kind text NOT NULL CHECK (kind IN ('boost', 'partnership', 'catalog', 'other')),
    status text NOT NULL CHECK (status IN ('running', 'paused')),
    budget_type text NOT NULL CHECK (budget_type IN ('daily', 'lifetime')),
    budget numeric(14, 2) NOT NULL CHECK (budget >= 0),
    starts_at timestamptz,
    ends_at timestamptz,
    -- The platform's post the ad promotes, and the service's post when it is one.
    story_id text,
    post_id uuid REFERENCES posts(id),
    by_fleetdesk boolean NOT NULL DEFAULT false,
    synced_at timestamptz NOT NULL,
    PRIMARY KEY (workspace_id, id),
    FOREIGN KEY (workspace_id, ad_account_id) REFERENCES ad_accounts (workspace_id, id)
);

CREATE TABLE ad_proposals (
    id uuid PRIMARY KEY,
    organization_id uuid NOT NULL REFERENCES organizations(id),
    workspace_id uuid NOT NULL REFERENCES workspaces(id),
    agent_id uuid NOT NULL REFERENCES agents(id),
    kind text NOT NULL CHECK (kind IN ('pause', 'resume', 'budget', 'boost')),
    status text NOT NULL DEFAULT 'waiting'
        CHECK (status IN ('waiting', 'approved', 'executed', 'failed', 'refused', 'expired')),
    -- What a waiting proposal is the same as: the kind and the ad (or post).
    target text NOT NULL,
    ad_id text,
    post_id uuid REFERENCES posts(id),
    ad_account_id text,
    budget_type text CHECK (budget_type IN ('daily', 'lifetime')),
    amount numeric(14, 2) CHECK (amount > 0),
    days integer CHECK (days BETWEEN 2 AND 90),
    countries text[] NOT NULL DEFAULT '{}',
    reason text NOT NULL,
    decision_id uuid NOT NULL REFERENCES decisions(id),
    -- What the platform answered, or why it failed.
    result jsonb,
    created_at timestamptz NOT NULL,
    decided_by jsonb,
    decided_at timestamptz,
    executed_at timestamptz,
    CHECK ((kind = 'boost') = (post_id IS NOT NULL)),
    CHECK ((kind = 'boost') = (ad_id IS NULL))
);

-- At most one waiting proposal per kind and target in a workspace.
CREATE UNIQUE INDEX ad_proposals_waiting ON ad_proposals (workspace_id, kind, target)
    WHERE status = 'waiting';
CREATE INDEX ad_proposals_recent ON ad_proposals (workspace_id, created_at DESC);
CREATE UNIQUE INDEX ad_proposals_decision ON ad_proposals (decision_id);
