//! The knowledge base: what agents write from (worldview, voice, formats, lessons) and what the
//! community assistant answers from.
//!
//! - [`search`]: the terms of Chinese (either script, segmented) and English text, one
//!   pipeline at index and at query time; snippets.
//! - [`sources`]: wiki sources, when each is due, and what a sync run may report.

pub mod search;
pub mod sources;
