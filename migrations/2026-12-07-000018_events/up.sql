-- The event log (an outbox): each row is written in the transaction of the change it tells,
-- and numbered (`seq`) when that transaction commits, in commit order: readers page by `seq`
-- and never miss a row committed behind them. Kept 30 days.
CREATE SEQUENCE event_seq AS bigint;

CREATE TABLE events (
    id uuid PRIMARY KEY,
    -- NULL until the writing transaction commits (then never NULL to any other reader).
    seq bigint UNIQUE,
    kind text NOT NULL,
    -- When the writing transaction began.
    occurred_at timestamptz NOT NULL DEFAULT now(),
    workspace_id uuid NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
    -- The agent whose object it is (who reads it in the feed, for the kinds shown to owners).
    agent_id uuid,
    object_id uuid NOT NULL,
    data jsonb NOT NULL
);

CREATE INDEX events_feed ON events (workspace_id, seq);
CREATE INDEX events_age ON events (occurred_at);

-- Numbers an event as its transaction commits. A deferred constraint trigger runs at commit,
-- after every statement of the transaction; the transaction-scoped advisory lock is held
-- until the commit is visible, so numbers follow commit order. A write with no event takes
-- no lock. The notification (sent on commit) wakes the instances' waiting feeds.
CREATE FUNCTION events_number() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_advisory_xact_lock(1717856630, 0); -- 'fdev'
    UPDATE events SET seq = nextval('event_seq') WHERE id = NEW.id;
    PERFORM pg_notify('fleetdesk_events', NEW.workspace_id::text);
    RETURN NULL;
END
$$;

CREATE CONSTRAINT TRIGGER events_number AFTER INSERT ON events
    DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION events_number();
