//! The rules of a draft's content: characters from the cast, inline images, and the media
//! list a post ends up with.

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use fleetdesk_kernel::Platform;
use fleetdesk_kernel::digest::sha256_hex;
use fleetdesk_kernel::media::{CapError, MediaKind, MediaType, check_caps};
use fleetdesk_media::image_size;
pub use fleetdesk_posts::post::Character;
use uuid::Uuid;

/// Characters one post may feature.
pub const MAX_CHARACTERS: usize = 6;
/// Inline images per request and their total decoded size.
pub const MAX_INLINE_IMAGES: usize = 4;
pub const MAX_INLINE_BYTES: usize = 3 * 1024 * 1024;

/// A character as the agent names it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CharacterPick {
    pub code: String,
    pub pov: bool,
}

/// A cast entry of the account's persona.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CastMember {
    pub code: String,
    pub name: String,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CharacterError {
    #[error("at most {MAX_CHARACTERS} characters")]
    TooMany,
    #[error("at most one character may be the point of view")]
    SeveralPov,
    #[error("{0} is named twice")]
    Repeated(String),
    #[error("{0} is not in the cast of this account's persona")]
    NotInCast(String),
}

impl CharacterError {
    /// Count and pov errors are malformed input (400); a code outside the cast is a rule (422).
    pub fn is_rule(&self) -> bool {
        matches!(self, CharacterError::NotInCast(_))
    }
}

/// Checks characters against the cast; the first is the main character. Returns the index of
/// the offending entry with the error.
pub fn check_characters(
    picks: &[CharacterPick],
    cast: &[CastMember],
) -> Result<Vec<Character>, (Option<usize>, CharacterError)> {
    check_character_shape(picks)?;
    picks
        .iter()
        .enumerate()
        .map(|(i, p)| {
            cast.iter()
                .find(|c| c.code == p.code)
                .map(|c| Character {
                    code: c.code.clone(),
                    name: c.name.clone(),
                    pov: p.pov,
                })
                .ok_or_else(|| (Some(i), CharacterError::NotInCast(p.code.clone())))
        })
        .collect()
}

/// The checks that need no cast: count, one pov, no repeats.
pub fn check_character_shape(
    picks: &[CharacterPick],
) -> Result<(), (Option<usize>, CharacterError)> {
    if picks.len() > MAX_CHARACTERS {
        return Err((None, CharacterError::TooMany));
    }
    if let Some(second) = picks.iter().enumerate().filter(|(_, p)| p.pov).nth(1) {
        return Err((Some(second.0), CharacterError::SeveralPov));
    }
    for (i, p) in picks.iter().enumerate() {
        if picks[..i].iter().any(|q| q.code == p.code) {
            return Err((Some(i), CharacterError::Repeated(p.code.clone())));
        }
    }
    Ok(())
}

/// An inline image, decoded and checked.
#[derive(Clone, PartialEq, Eq)]
pub struct InlineImage {
    pub bytes: bytes::Bytes,
    pub media_type: MediaType,
    pub sha256: String,
    pub width: Option<i32>,
    pub height: Option<i32>,
    pub caption: Option<String>,
}

impl std::fmt::Debug for InlineImage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("InlineImage")
            .field("bytes", &self.bytes.len())
            .field("media_type", &self.media_type)
            .field("sha256", &self.sha256)
            .finish()
    }
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum InlineImageError {
    #[error("at most {MAX_INLINE_IMAGES} inline images; upload more with create_upload")]
    TooMany,
    #[error("is not valid base64")]
    Base64,
    #[error("is not a JPEG, PNG or WebP image")]
    NotAnImage,
    #[error(
        "inline images add up to {0} bytes; at most {MAX_INLINE_BYTES} in total (use create_upload)"
    )]
    TooLarge(usize),
}

/// Decodes inline images (base64, an optional `data:...;base64,` prefix), judging each type
/// from its bytes. The error carries the index of the offending image.
pub fn decode_inline_images(
    images: &[(String, Option<String>)],
) -> Result<Vec<InlineImage>, (Option<usize>, InlineImageError)> {
    if images.len() > MAX_INLINE_IMAGES {
        return Err((None, InlineImageError::TooMany));
    }
    let mut total = 0usize;
    let mut out = Vec::with_capacity(images.len());
    for (i, (data, caption)) in images.iter().enumerate() {
        let data = match data.split_once(";base64,") {
            Some((prefix, rest)) if prefix.starts_with("data:") => rest,
            _ => data.as_str(),
        };
        // Cheap bound before decoding: base64 grows by 4/3.
        if total + data.len() / 4 * 3 > MAX_INLINE_BYTES + 3 {
            return Err((
                Some(i),
                InlineImageError::TooLarge(total + data.len() / 4 * 3),
            ));
        }
        let bytes = STANDARD
            .decode(data.trim())
            .map_err(|_| (Some(i), InlineImageError::Base64))?;
        total += bytes.len();
        if total > MAX_INLINE_BYTES {
            return Err((Some(i), InlineImageError::TooLarge(total)));
        }
        let media_type = MediaType::sniff(&bytes)
            .filter(|t| t.kind() == MediaKind::Image)
            .ok_or((Some(i), InlineImageError::NotAnImage))?;
        let (width, height) = image_size(&bytes);
        out.push(InlineImage {
            sha256: sha256_hex(&bytes),
            bytes: bytes.into(),
            media_type,
            width,
            height,
            caption: caption.clone(),
        });
    }
    Ok(out)
}

/// A media item as the attach rules see it; read from `{"id", "kind"}` as a post's media are
/// loaded.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Deserialize)]
pub struct MediaRef {
    pub id: Uuid,
    pub kind: MediaKind,
}

/// The items to append to a post that already carries `existing`: `incoming` in order, each
/// item once, items already on the post skipped; then the per-post caps checked on the result.
pub fn plan_media(
    platform: Platform,
    existing: &[MediaRef],
    incoming: &[MediaRef],
) -> Result<Vec<MediaRef>, CapError> {
    let mut added: Vec<MediaRef> = Vec::new();
    for m in incoming {
        if existing.iter().chain(added.iter()).any(|e| e.id == m.id) {
            continue;
        }
        added.push(*m);
    }
    let kinds: Vec<MediaKind> = existing
        .iter()
        .chain(added.iter())
        .map(|m| m.kind)
        .collect();
    check_caps(platform, &kinds)?;
    Ok(added)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cast() -> Vec<CastMember> {
        ["momo", "lulu", "kiki", "bebe", "coco", "dodo", "fifi"]
            .iter()
            .map(|c| CastMember {
                code: c.to_string(),
                name: c.to_uppercase(),
            })
            .collect()
    }

    fn picks(codes: &[&str]) -> Vec<CharacterPick> {
        codes
            .iter()
            .map(|c| CharacterPick {
                code: c.to_string(),
                pov: false,
            })
            .collect()
    }

    #[test]
    fn six_characters_pass_and_seven_do_not() {
        let six = picks(&["momo", "lulu", "kiki", "bebe", "coco", "dodo"]);
        let out = check_characters(&six, &cast()).unwrap();
        assert_eq!(out[0].code, "momo", "the main character stays first");
        assert_eq!(out[0].name, "MOMO");
        let seven = picks(&["momo", "lulu", "kiki", "bebe", "coco", "dodo", "fifi"]);
        assert_eq!(
            check_characters(&seven, &cast()),
            Err((None, CharacterError::TooMany))
        );
    }

    #[test]
    fn one_pov_at_most() {
        let mut p = picks(&["momo", "lulu"]);
        p[0].pov = true;
        assert!(check_characters(&p, &cast()).is_ok());
        p[1].pov = true;
        assert_eq!(
            check_characters(&p, &cast()),
            Err((Some(1), CharacterError::SeveralPov))
        );
    }

    #[test]
    fn codes_outside_the_cast_and_repeats_are_refused() {
        let err = check_characters(&picks(&["momo", "nobody"]), &cast()).unwrap_err();
        assert_eq!(err, (Some(1), CharacterError::NotInCast("nobody".into())));
        assert!(err.1.is_rule());
        let err = check_characters(&picks(&["momo", "momo"]), &cast()).unwrap_err();
        assert_eq!(err.0, Some(1));
        assert!(!err.1.is_rule());
        assert_eq!(check_characters(&[], &cast()), Ok(vec![]));
    }

    fn png(extra: usize) -> Vec<u8> {
        let mut b = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR\0\0\0\x10\0\0\0\x08\x08\x02\0\0\0".to_vec();
        b.resize(b.len() + extra, 0);
        b
    }

    #[test]
    fn inline_images_are_judged_from_their_bytes() {
        let data = STANDARD.encode(png(10));
        let out = decode_inline_images(&[(format!("data:image/gif;base64,{data}"), None)]).unwrap();
        assert_eq!(out[0].media_type, MediaType::Png);
        assert_eq!((out[0].width, out[0].height), (Some(16), Some(8)));
        let gif = STANDARD.encode(b"GIF89a\x01\0\x01\0\0\0\0");
        assert_eq!(
            decode_inline_images(&[(gif, None)]).unwrap_err(),
            (Some(0), InlineImageError::NotAnImage)
        );
        assert_eq!(
            decode_inline_images(&[("not base64!".into(), None)]).unwrap_err(),
            (Some(0), InlineImageError::Base64)
        );
    }

    #[test]
    fn four_images_and_three_megabytes_at_most() {
        let one = (STANDARD.encode(png(0)), None);
        assert_eq!(
            decode_inline_images(&vec![one.clone(); 4]).unwrap().len(),
            4
        );
        assert_eq!(
            decode_inline_images(&vec![one; 5]).unwrap_err(),
            (None, InlineImageError::TooMany)
        );
        let header = png(0).len();
        let exactly = STANDARD.encode(png(MAX_INLINE_BYTES - header));
        assert!(decode_inline_images(&[(exactly, None)]).is_ok());
        let over = STANDARD.encode(png(MAX_INLINE_BYTES - header + 1));
        assert!(matches!(
            decode_inline_images(&[(over, None)]).unwrap_err(),
            (Some(0), InlineImageError::TooLarge(_))
        ));
        let half = STANDARD.encode(png(MAX_INLINE_BYTES / 2));
        assert!(matches!(
            decode_inline_images(&[(half.clone(), None), (half, None)]).unwrap_err(),
            (Some(1), InlineImageError::TooLarge(_))
        ));
    }

    fn m(n: u128, kind: MediaKind) -> MediaRef {
        MediaRef {
            id: Uuid::from_u128(n),
            kind,
        }
    }

    #[test]
    fn media_keep_their_order_and_skip_what_the_post_has() {
        let existing = [m(1, MediaKind::Image)];
        let incoming = [
            m(3, MediaKind::Image),
            m(1, MediaKind::Image),
            m(2, MediaKind::Video),
            m(3, MediaKind::Image),
        ];
        let added = plan_media(Platform::Threads, &existing, &incoming).unwrap();
        assert_eq!(added, vec![m(3, MediaKind::Image), m(2, MediaKind::Video)]);
    }

    #[test]
    fn media_caps_count_what_the_post_already_has() {
        let existing: Vec<_> = (0..3).map(|n| m(n, MediaKind::Image)).collect();
        assert!(plan_media(Platform::X, &existing, &[m(10, MediaKind::Image)]).is_ok());
        assert!(
            plan_media(
                Platform::X,
                &existing,
                &[m(10, MediaKind::Image), m(11, MediaKind::Image)]
            )
            .is_err()
        );
        assert_eq!(
            plan_media(Platform::Reddit, &[], &[m(1, MediaKind::Video)]),
            Err(CapError::NoVideo {
                platform: Platform::Reddit
            })
        );
    }
}
