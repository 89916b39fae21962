-- A heartbeat is found by its agent and run_id, never by its id (which only names it in the
-- answer), so (agent_id, run_id) becomes the primary key and the id's own index goes: one
-- index fewer to write on the hottest insert, and no random uuid keys scattered over it.
ALTER TABLE agent_runs DROP CONSTRAINT agent_runs_pkey;
ALTER TABLE agent_runs DROP CONSTRAINT agent_runs_agent_id_run_id_key;
ALTER TABLE agent_runs ADD CONSTRAINT agent_runs_pkey PRIMARY KEY (agent_id, run_id);
