-- Ad picks (issue 15): a person's choice of a research card for an account, numbered SP-<n>
-- per organization, which an agent drafts a sponsored post with.

ALTER TABLE organizations ADD COLUMN next_pick bigint NOT NULL DEFAULT 1 CHECK (next_pick > 0);

CREATE TABLE ad_picks (
    id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    organization_id uuid NOT NULL REFERENCES organizations(id),
    number bigint NOT NULL CHECK (number > 0),
    workspace_id uuid NOT NULL REFERENCES workspaces(id),
    slot_id uuid NOT NULL REFERENCES account_slots(id),
    research_id uuid NOT NULL,
    position smallint NOT NULL,
    note text,
    card jsonb NOT NULL,
    status text NOT NULL DEFAULT 'open' CHECK (status IN ('open', 'drafted', 'cancelled')),
    post_id uuid REFERENCES posts(id),
    created_at timestamptz NOT NULL,
    created_by uuid NOT NULL REFERENCES people(id),
    drafted_at timestamptz,
    cancelled_at timestamptz,
    cancelled_by uuid REFERENCES people(id),
    UNIQUE (organization_id, number),
    FOREIGN KEY (research_id, position) REFERENCES ad_research_items (research_id, position),
    CHECK ((post_id IS NULL) = (drafted_at IS NULL)),
    CHECK (status <> 'drafted' OR post_id IS NOT NULL),
    CHECK ((status = 'cancelled') = (cancelled_at IS NOT NULL))
);

-- One pick per post.
CREATE UNIQUE INDEX ad_picks_post ON ad_picks (post_id) WHERE status = 'drafted';

-- An agent's picks: by account, newest first.
CREATE INDEX ad_picks_slot ON ad_picks (slot_id, number DESC);
