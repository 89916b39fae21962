-- Task cards worked by agents, the agents' cron jobs and their runs, the reports people read,
-- and the job queue background work runs on.

-- A card opened by an agent on its own persona's target: who asked (the same agent asking again
-- is recorded in also_wanted_by), and the reason a failed card gives.
ALTER TABLE task_cards
    ADD COLUMN opened_by_agent uuid REFERENCES agents(id),
    ADD COLUMN origin jsonb,
    ADD COLUMN fail_reason text;
-- One open card per agent, kind and target: a second request joins it (`also_wanted_by`).
CREATE INDEX task_cards_open_target ON task_cards (persona_id, kind, target_type)
    WHERE status IN ('pending_pickup', 'in_progress', 'pending_confirmation');

-- An agent's cron jobs, upserted by its own job_id; never deleted by a report that omits them.
CREATE TABLE cron_jobs (
    id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    workspace_id uuid NOT NULL REFERENCES workspaces(id),
    agent_id uuid NOT NULL REFERENCES agents(id),
    job_id text NOT NULL,
    name text NOT NULL,
    schedule text NOT NULL,
    timezone text NOT NULL,
    gateway text,
    enabled boolean NOT NULL DEFAULT true,
    description text,
    created_at timestamptz NOT NULL DEFAULT now(),
    updated_at timestamptz NOT NULL DEFAULT now(),
    UNIQUE (agent_id, job_id)
);
CREATE INDEX cron_jobs_workspace ON cron_jobs (workspace_id);

-- One row per run_id of a job: a long job reports `running` first and its result later.
CREATE TABLE cron_runs (
    id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    job uuid NOT NULL REFERENCES cron_jobs(id),
    run_id text NOT NULL,
    started_at timestamptz,
    finished_at timestamptz,
    status text NOT NULL CHECK (status IN ('success', 'failed', 'skipped', 'running', 'unknown')),
    summary text,
    log text,
    created_at timestamptz NOT NULL DEFAULT now(),
    updated_at timestamptz NOT NULL DEFAULT now(),
    UNIQUE (job, run_id)
);
CREATE INDEX cron_runs_latest ON cron_runs (job, started_at DESC NULLS LAST);

-- Reports of a workspace over a period, built by the service from reported posts and metrics.
-- `weekly` ones are built on Mondays for the week before: at most one per workspace and week.
CREATE TABLE reports (
    id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    organization_id uuid NOT NULL REFERENCES organizations(id),
    workspace_id uuid NOT NULL REFERENCES workspaces(id),
    title text NOT NULL,
    period_from date NOT NULL,
    period_to date NOT NULL CHECK (period_to >= period_from),
    weekly boolean NOT NULL DEFAULT false,
    -- totals, accounts and top_posts as the record shows them.
    body jsonb NOT NULL,
    created_by text NOT NULL,
    issued_at timestamptz,
    issued_by text,
    created_at timestamptz NOT NULL DEFAULT now()
);
CREATE UNIQUE INDEX reports_weekly ON reports (workspace_id, period_from) WHERE weekly;
CREATE INDEX reports_listing ON reports (organization_id, created_at DESC, id DESC);

-- The job queue: background work (weekly reports, later paid research and ad syncs) taken by
-- one instance at a time (`FOR UPDATE SKIP LOCKED`), retried when the instance holding it dies
-- (`locked_until` passes). `(kind, key)` makes enqueuing the same work twice a no-op.
CREATE TABLE jobs (
    id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    kind text NOT NULL,
    key text NOT NULL,
    payload jsonb NOT NULL DEFAULT '{}',
    status text NOT NULL DEFAULT 'queued' CHECK (status IN ('queued', 'running', 'done', 'failed')),
    run_at timestamptz NOT NULL DEFAULT now(),
    attempts integer NOT NULL DEFAULT 0,
    locked_until timestamptz,
    last_error text,
    created_at timestamptz NOT NULL DEFAULT now(),
    finished_at timestamptz,
    UNIQUE (kind, key)
);
CREATE INDEX jobs_due ON jobs (run_at) WHERE status IN ('queued', 'running');
