//! The knowledge base: what agents write from (worldview, voice, formats, lessons) and what the
//! community assistant answers from.
//!
//! - [`aliases`]: the synonyms a glossary entry declares (`A醇 = 视黄醇`) and how a query
//!   grows by them;
//! - [`entry`]: categories, statuses, what a proposal must be, how it finds its entry and how
//!   it lands (canon, or a draft a person decides through a `wiki_draft` decision);
//! - [`meaning`]: ranking by meaning beside the words: vectors of an embedding model, what of
//!   an entry is embedded and how the two rankings fuse;
//! - [`ports`]: the `WikiRepo` port, one method per atomic use case;
//! - [`query`]: a search query planned: its words and their other names (English, mainland
//!   wording, synonyms), their weights and the bounded passes storage ranks;
//! - [`service`]: search (query terms and snippets here, ranking in storage);
//! - [`search`]: the terms of Chinese (either script, segmented) and English text, one
//!   pipeline at index and at query time; snippets;
//! - [`sources`]: wiki sources, when each is due, and what a sync run may report.

pub mod aliases;
pub mod entry;
pub mod meaning;
pub mod ports;
pub mod query;
pub mod search;
pub mod service;
pub mod sources;
#[cfg(feature = "wire")]
pub mod wire;
