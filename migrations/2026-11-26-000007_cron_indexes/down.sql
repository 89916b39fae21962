DROP INDEX agent_runs_agent_latest;
DROP INDEX cron_runs_day_latest;
