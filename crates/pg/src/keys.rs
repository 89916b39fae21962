//! keys.

statements!();
