//! today.

statements!();
