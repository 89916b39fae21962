//! reports.

statements!();
