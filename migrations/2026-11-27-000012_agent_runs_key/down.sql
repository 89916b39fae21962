ALTER TABLE agent_runs DROP CONSTRAINT agent_runs_pkey;
ALTER TABLE agent_runs ADD CONSTRAINT agent_runs_pkey PRIMARY KEY (id);
ALTER TABLE agent_runs ADD CONSTRAINT agent_runs_agent_id_run_id_key UNIQUE (agent_id, run_id);
