//! Placeholder: filled in by issue 13.

statements!();
