//! Drafts, uploads and the media library.
//!
//! The rules live here as plain functions and types: which statuses a draft may be edited in,
//! how characters and inline images are checked, how an upload is planned and its chunks
//! accepted, how a file's type is judged from its first bytes and a video's size and length
//! read from its container. Storage and SQL are reached through the ports in [`ports`].

pub mod draft;
pub mod lifecycle;
pub mod media;
pub mod metrics;
pub mod ports;
pub mod post;
pub mod probe;
pub mod report;
pub mod review;
pub mod service;
pub mod upload;
