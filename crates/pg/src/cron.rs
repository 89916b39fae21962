//! cron.

statements!();
