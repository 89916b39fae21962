-- The post lifecycle: review, what agents report, metrics and inventory.

-- What agents reported about a post, and where it came from.
ALTER TABLE posts
    -- The account's platform, so that a platform id is unique per organization and platform.
    ADD COLUMN platform text,
    -- `service`: written as a draft here; `report`: first seen in an agent's report. A post
    -- created by a report follows platform edits; a service post keeps its body.
    ADD COLUMN origin text NOT NULL DEFAULT 'service' CHECK (origin IN ('service', 'report')),
    -- SHA-256 of the body trimmed with whitespace runs collapsed (computed by the service),
    -- for matching reports without ids.
    ADD COLUMN body_key text,
    ADD COLUMN scheduled_for timestamptz,
    ADD COLUMN published_at timestamptz,
    ADD COLUMN platform_post_id text,
    -- A publishing tool's own id that a platform id replaced.
    ADD COLUMN scheduler_ref text,
    ADD COLUMN permalink text,
    ADD COLUMN has_media boolean,
    ADD COLUMN failure_reason text,
    ADD COLUMN last_reported_at timestamptz,
    -- Inventory: the status and plan before stocking, and whether the agent still has to
    -- remove the post from its own publishing tool.
    ADD COLUMN from_status text,
    ADD COLUMN planned_was timestamptz,
    ADD COLUMN unschedule_pending boolean NOT NULL DEFAULT false,
    -- Deleted from inventory on behalf of an agency person: kept, never scheduled again.
    ADD COLUMN discarded_at timestamptz;

UPDATE posts p SET platform = s.platform FROM account_slots s WHERE s.id = p.slot_id;
ALTER TABLE posts ALTER COLUMN platform SET NOT NULL;

CREATE UNIQUE INDEX posts_platform_id ON posts (organization_id, platform, platform_post_id)
    WHERE platform_post_id IS NOT NULL;
CREATE INDEX posts_slot_body_key ON posts (slot_id, body_key);
CREATE INDEX posts_slot_published ON posts (slot_id, published_at) WHERE status = 'published';
CREATE INDEX posts_slot_scheduled ON posts (slot_id, scheduled_for) WHERE status IN ('scheduled', 'publishing');
CREATE INDEX posts_slot_planned ON posts (slot_id, planned_at)
    WHERE status IN ('approved', 'internal_review', 'client_review');
CREATE INDEX posts_unschedule ON posts (slot_id) WHERE unschedule_pending;
CREATE INDEX posts_review_queue ON posts (organization_id, status, (COALESCE(planned_at, created_at)), id);

-- One row per report_posts call that wrote something.
CREATE TABLE post_reports (
    id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    agent_id uuid NOT NULL REFERENCES agents(id),
    workspace_id uuid NOT NULL REFERENCES workspaces(id),
    received_at timestamptz NOT NULL DEFAULT now(),
    inserted integer NOT NULL,
    updated integer NOT NULL,
    unchanged integer NOT NULL,
    ignored integer NOT NULL,
    rejected integer NOT NULL
);
CREATE INDEX post_reports_agent ON post_reports (agent_id, received_at DESC);

-- Metrics as agents read them off the platforms; one row per post (or account) and capture.
CREATE TABLE post_metrics (
    post_id uuid NOT NULL REFERENCES posts(id),
    captured_at timestamptz NOT NULL,
    views bigint,
    likes bigint,
    replies bigint,
    reposts bigint,
    shares bigint,
    agent_id uuid REFERENCES agents(id),
    recorded_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (post_id, captured_at)
);

CREATE TABLE account_metrics (
    slot_id uuid NOT NULL REFERENCES account_slots(id),
    captured_at timestamptz NOT NULL,
    followers bigint NOT NULL,
    agent_id uuid REFERENCES agents(id),
    recorded_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (slot_id, captured_at)
);
