//! Media: the file types the service stores, uploads and their chunks, the video probe and the
//! library.
//!
//! The rules live here as plain functions and types: how a file's type is judged from its first
//! bytes, the per-post caps, how an upload is planned and its chunks accepted, a video's size
//! and length read from its container. Storage and SQL are reached through the ports in
//! [`ports`].

pub mod ports;
pub mod probe;
pub mod service;
pub mod thumbnail;
pub mod thumbs;
pub mod upload;
#[cfg(feature = "wire")]
pub mod wire;

/// Width and height read from an image header, when it has them.
pub fn image_size(bytes: &[u8]) -> (Option<i32>, Option<i32>) {
    match imagesize::blob_size(bytes) {
        Ok(s) => (i32::try_from(s.width).ok(), i32::try_from(s.height).ok()),
        Err(_) => (None, None),
    }
}
