-- Heartbeats are the hottest insert. Their agent comes from the authenticated key and agents
-- are never deleted, so this foreign key guarded nothing the service could get wrong, while
-- its check locked the agent's row (FOR KEY SHARE) for every heartbeat: concurrent heartbeats
-- of one agent share that lock through a MultiXact, rewritten each time. Measured with the
-- load benchmark: 178 µs of PostgreSQL CPU per heartbeat without it, 200-214 with it
-- (docs/benchmarks.md).
ALTER TABLE agent_runs DROP CONSTRAINT agent_runs_agent_id_fkey;
