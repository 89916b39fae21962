//! tasks.

statements!();
