//! Media types, judged from a file's first bytes, and the per-post caps.

use crate::Platform;
use serde::{Deserialize, Serialize};

/// Largest file sent in one PUT (images, and videos up to this size): 4 MiB.
pub const SINGLE_MAX_BYTES: u64 = 4 * 1024 * 1024;
/// Largest video: 500 MiB.
pub const VIDEO_MAX_BYTES: u64 = 524_288_000;
/// Every chunk but the last has exactly this size: 3 MiB.
pub const CHUNK_BYTES: u64 = 3_145_728;
/// Largest poster image: 4 MiB.
pub const POSTER_MAX_BYTES: u64 = 4 * 1024 * 1024;
/// How many header bytes [`MediaType::sniff`] needs to decide.
pub const SNIFF_BYTES: usize = 32;

crate::text_enum! {
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
    #[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
    #[serde(rename_all = "lowercase")]
    pub enum MediaKind {
        Image => "image",
        Video => "video",
    }
}

crate::text_enum! {
    /// The six file types the service stores.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
    #[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
    pub enum MediaType {
        #[serde(rename = "image/jpeg")]
        Jpeg => "image/jpeg",
        #[serde(rename = "image/png")]
        Png => "image/png",
        #[serde(rename = "image/webp")]
        Webp => "image/webp",
        #[serde(rename = "video/mp4")]
        Mp4 => "video/mp4",
        #[serde(rename = "video/quicktime")]
        Mov => "video/quicktime",
        #[serde(rename = "video/webm")]
        Webm => "video/webm",
    }
}

impl MediaType {
    /// The MIME name: the stored text ([`MediaType::as_str`]), under the name callers use.
    pub fn mime(self) -> &'static str {
        self.as_str()
    }

    /// The type whose MIME name is exactly `mime` ([`MediaType::parse`]).
    pub fn from_mime(mime: &str) -> Option<MediaType> {
        MediaType::parse(mime)
    }

    pub fn extension(self) -> &'static str {
        match self {
            MediaType::Jpeg => "jpg",
            MediaType::Png => "png",
            MediaType::Webp => "webp",
            MediaType::Mp4 => "mp4",
            MediaType::Mov => "mov",
            MediaType::Webm => "webm",
        }
    }

    pub fn kind(self) -> MediaKind {
        match self {
            MediaType::Jpeg | MediaType::Png | MediaType::Webp => MediaKind::Image,
            MediaType::Mp4 | MediaType::Mov | MediaType::Webm => MediaKind::Video,
        }
    }

    /// Judges the type from the file's first bytes (at least [`SNIFF_BYTES`] when the file
    /// is that long); `None` for anything else. A declared type is never trusted.
    pub fn sniff(head: &[u8]) -> Option<MediaType> {
        if head.starts_with(&[0xFF, 0xD8, 0xFF]) {
            return Some(MediaType::Jpeg);
        }
        if head.starts_with(b"\x89PNG\r\n\x1a\n") {
            return Some(MediaType::Png);
        }
        if head.len() >= 12 && &head[0..4] == b"RIFF" && &head[8..12] == b"WEBP" {
            return Some(MediaType::Webp);
        }
        if head.starts_with(&[0x1A, 0x45, 0xDF, 0xA3]) {
            // EBML: Matroska and WebM share the header; the DocType tells them apart.
            return contains(&head[..head.len().min(64)], b"webm").then_some(MediaType::Webm);
        }
        if head.len() >= 12 && &head[4..8] == b"ftyp" {
            let brand = &head[8..12];
            return Some(if brand == b"qt  " {
                MediaType::Mov
            } else {
                MediaType::Mp4
            });
        }
        // Old QuickTime files may start with other atoms before (or without) ftyp.
        if head.len() >= 8 && matches!(&head[4..8], b"moov" | b"mdat" | b"wide" | b"free") {
            return Some(MediaType::Mov);
        }
        None
    }
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    haystack.windows(needle.len()).any(|w| w == needle)
}

/// Why media cannot go on a post.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CapError {
    #[error("a {platform} post carries at most {cap} media items; it would have {would_have}")]
    TooMany {
        platform: Platform,
        cap: usize,
        would_have: usize,
    },
    #[error("a {platform} post cannot carry video")]
    NoVideo { platform: Platform },
}

/// Checks the per-post caps for a post that would carry `kinds` in all.
pub fn check_caps(platform: Platform, kinds: &[MediaKind]) -> Result<(), CapError> {
    if !platform.carries_video() && kinds.contains(&MediaKind::Video) {
        return Err(CapError::NoVideo { platform });
    }
    let cap = platform.media_cap();
    if kinds.len() > cap {
        return Err(CapError::TooMany {
            platform,
            cap,
            would_have: kinds.len(),
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stored_text_is_the_serde_form() {
        fn check<T: Serialize>(all: &[T], text: fn(&T) -> &'static str) {
            for v in all {
                assert_eq!(serde_json::to_value(v).unwrap(), text(v));
            }
        }
        check(&MediaKind::ALL, |v| v.as_str());
        check(&MediaType::ALL, |v| v.as_str());
    }

    #[test]
    fn sniffs_every_supported_type_from_its_header() {
        assert_eq!(
            MediaType::sniff(&[0xFF, 0xD8, 0xFF, 0xE0, 0, 0]),
            Some(MediaType::Jpeg)
        );
        assert_eq!(
            MediaType::sniff(b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR"),
            Some(MediaType::Png)
        );
        assert_eq!(
            MediaType::sniff(b"RIFF\x10\0\0\0WEBPVP8 "),
            Some(MediaType::Webp)
        );
        assert_eq!(
            MediaType::sniff(b"\0\0\0\x20ftypisom\0\0\x02\0isomiso2"),
            Some(MediaType::Mp4)
        );
        assert_eq!(
            MediaType::sniff(b"\0\0\0\x14ftypqt  \0\0\x02\0qt  "),
            Some(MediaType::Mov)
        );
        assert_eq!(
            MediaType::sniff(b"\x1a\x45\xdf\xa3\x9f\x42\x86\x81\x01\x42\x82\x84webm"),
            Some(MediaType::Webm)
        );
    }

    #[test]
    fn refuses_what_it_does_not_store() {
        assert_eq!(MediaType::sniff(b"GIF89a\0\0\0\0\0\0"), None);
        assert_eq!(MediaType::sniff(b"%PDF-1.7\n"), None);
        assert_eq!(MediaType::sniff(b""), None);
        // Matroska that is not WebM.
        assert_eq!(
            MediaType::sniff(b"\x1a\x45\xdf\xa3\x9f\x42\x86\x81\x01\x42\x82\x88matroska"),
            None
        );
    }

    #[test]
    fn mime_names_round_trip() {
        for t in MediaType::ALL {
            assert_eq!(MediaType::from_mime(t.mime()), Some(t));
        }
        assert_eq!(MediaType::from_mime("image/gif"), None);
    }

    #[test]
    fn caps_at_the_limit_and_one_past() {
        let images = |n| vec![MediaKind::Image; n];
        assert!(check_caps(Platform::Instagram, &images(10)).is_ok());
        assert!(matches!(
            check_caps(Platform::Instagram, &images(11)),
            Err(CapError::TooMany { cap: 10, .. })
        ));
        assert!(check_caps(Platform::Threads, &images(4)).is_ok());
        assert!(check_caps(Platform::Threads, &images(5)).is_err());
        assert!(check_caps(Platform::Reddit, &images(4)).is_ok());
        assert_eq!(
            check_caps(Platform::Reddit, &[MediaKind::Video]),
            Err(CapError::NoVideo {
                platform: Platform::Reddit
            })
        );
        assert!(check_caps(Platform::Tiktok, &[MediaKind::Video; 4]).is_ok());
    }
}
