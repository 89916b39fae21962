-- Webhook endpoints an agency registers per workspace, and the deliveries of events to them:
-- a queue of its own (each delivery has its own retry schedule, and one endpoint's deliveries
-- about one object go out in the order the events committed), taken like jobs: under a lease,
-- by an instance whose advisory lock says whether it still lives.
CREATE TABLE webhook_endpoints (
    id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    workspace_id uuid NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
    url text NOT NULL,
    description text,
    -- The event types it receives; none: every type.
    types text[] NOT NULL DEFAULT '{}',
    enabled boolean NOT NULL DEFAULT true,
    -- Why the service disabled it (failing for days); NULL when a person did or it is on.
    disabled_reason text,
    -- The `whsec_` secret that signs (kept to sign; never answered after creation).
    secret text NOT NULL,
    -- The secret a rotation replaced, signing alongside until previous_until.
    previous_secret text,
    previous_until timestamptz,
    -- Since when its deliveries fail without a success.
    failing_since timestamptz,
    created_at timestamptz NOT NULL DEFAULT now(),
    updated_at timestamptz NOT NULL DEFAULT now()
);

CREATE INDEX webhook_endpoints_workspace ON webhook_endpoints (workspace_id);

-- Where fanning events out to endpoints stands: the last event number handed on.
CREATE TABLE webhook_dispatch (
    id boolean PRIMARY KEY DEFAULT true CHECK (id),
    last_seq bigint NOT NULL
);

INSERT INTO webhook_dispatch (last_seq) SELECT coalesce(max(seq), 0) FROM events;

CREATE TABLE webhook_deliveries (
    id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    endpoint_id uuid NOT NULL REFERENCES webhook_endpoints (id) ON DELETE CASCADE,
    event_id uuid NOT NULL REFERENCES events (id) ON DELETE CASCADE,
    seq bigint NOT NULL,
    object_id uuid NOT NULL,
    status text NOT NULL,
    -- Attempts of the current series (a replay starts a new one); the lease's token.
    attempts integer NOT NULL DEFAULT 0,
    next_at timestamptz NOT NULL DEFAULT now(),
    locked_until timestamptz,
    instance integer,
    last_status integer,
    last_error text,
    last_latency_ms integer,
    created_at timestamptz NOT NULL DEFAULT now(),
    delivered_at timestamptz,
    UNIQUE (endpoint_id, event_id)
);

CREATE INDEX webhook_deliveries_due ON webhook_deliveries (status, next_at);
CREATE INDEX webhook_deliveries_order ON webhook_deliveries (endpoint_id, object_id, seq);

-- The delivery log: every attempt.
CREATE TABLE webhook_attempts (
    id bigserial PRIMARY KEY,
    delivery_id uuid NOT NULL REFERENCES webhook_deliveries (id) ON DELETE CASCADE,
    at timestamptz NOT NULL,
    status_code integer,
    error text,
    latency_ms integer NOT NULL,
    body_excerpt text NOT NULL
);

CREATE INDEX webhook_attempts_delivery ON webhook_attempts (delivery_id, id);
