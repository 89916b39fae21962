//! Agents' cron jobs and their runs, as the agents report them: the service never runs them.
