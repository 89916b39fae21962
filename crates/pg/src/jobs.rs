//! jobs.

statements!();
