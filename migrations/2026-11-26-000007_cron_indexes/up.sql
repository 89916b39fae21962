-- GET /today reads, per cron job, its latest run and, per agent, its last heartbeat: both with
-- ORDER BY ... LIMIT 1 on these, so the reads stay one index probe as history grows.
-- The expression is the ORDER BY of fleetdesk_pg::today::DAY_JOBS, exactly.
CREATE INDEX cron_runs_day_latest
    ON cron_runs (job, (COALESCE(started_at, finished_at, created_at)) DESC, updated_at DESC);
CREATE INDEX agent_runs_agent_latest ON agent_runs (agent_id, recorded_at DESC);
