//! Avatar images: base64 with an optional `data:` prefix, JPEG, PNG or WebP judged from the
//! bytes (never from the prefix), at most 5 MB.

use base64::Engine;
use base64::alphabet;
use base64::engine::{DecodePaddingMode, GeneralPurpose, GeneralPurposeConfig};

/// 5 MB, the avatar and persona image limit.
pub const MAX_AVATAR_BYTES: usize = 5 * 1024 * 1024;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ImageKind {
    Jpeg,
    Png,
    Webp,
}

impl ImageKind {
    pub fn mime_type(self) -> &'static str {
        match self {
            ImageKind::Jpeg => "image/jpeg",
            ImageKind::Png => "image/png",
            ImageKind::Webp => "image/webp",
        }
    }

    pub fn extension(self) -> &'static str {
        match self {
            ImageKind::Jpeg => "jpg",
            ImageKind::Png => "png",
            ImageKind::Webp => "webp",
        }
    }

    /// Judges the type from the file header.
    pub fn sniff(bytes: &[u8]) -> Option<ImageKind> {
        match imagesize::image_type(bytes).ok()? {
            imagesize::ImageType::Jpeg => Some(ImageKind::Jpeg),
            imagesize::ImageType::Png => Some(ImageKind::Png),
            imagesize::ImageType::Webp => Some(ImageKind::Webp),
            _ => None,
        }
    }
}

/// A decoded, checked image.
#[derive(Clone)]
pub struct AvatarImage {
    pub bytes: Vec<u8>,
    pub kind: ImageKind,
    pub sha256: String,
    pub width: Option<u32>,
    pub height: Option<u32>,
}

impl std::fmt::Debug for AvatarImage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AvatarImage")
            .field("bytes", &self.bytes.len())
            .field("kind", &self.kind)
            .field("sha256", &self.sha256)
            .finish()
    }
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AvatarError {
    #[error("must not be empty")]
    Empty,
    #[error("is not valid base64")]
    Base64,
    #[error("is larger than 5 MB")]
    TooLarge,
    #[error("is not a JPEG, PNG or WebP image")]
    NotAnImage,
}

const LENIENT: GeneralPurpose = GeneralPurpose::new(
    &alphabet::STANDARD,
    GeneralPurposeConfig::new().with_decode_padding_mode(DecodePaddingMode::Indifferent),
);

impl AvatarImage {
    pub fn decode(data: &str) -> Result<AvatarImage, AvatarError> {
        Self::decode_limited(data, MAX_AVATAR_BYTES)
    }

    /// Decodes base64 (standard or URL-safe alphabet, padding optional, a `data:...;base64,`
    /// prefix allowed) and judges the type from the bytes.
    pub fn decode_limited(data: &str, max_bytes: usize) -> Result<AvatarImage, AvatarError> {
        let mut payload = data.trim();
        if payload.starts_with("data:") {
            payload = payload
                .split_once(',')
                .map(|(_, rest)| rest)
                .ok_or(AvatarError::Base64)?;
        }
        if payload.is_empty() {
            return Err(AvatarError::Empty);
        }
        // Refuse before decoding when even the encoded length is past the limit.
        if payload.len() / 4 * 3 > max_bytes + 3 {
            return Err(AvatarError::TooLarge);
        }
        let cleaned: String;
        let payload = if payload.contains(|c: char| c.is_ascii_whitespace() || c == '-' || c == '_')
        {
            cleaned = payload
                .chars()
                .filter(|c| !c.is_ascii_whitespace())
                .map(|c| match c {
                    '-' => '+',
                    '_' => '/',
                    c => c,
                })
                .collect();
            cleaned.as_str()
        } else {
            payload
        };
        let bytes = LENIENT.decode(payload).map_err(|_| AvatarError::Base64)?;
        if bytes.is_empty() {
            return Err(AvatarError::Empty);
        }
        if bytes.len() > max_bytes {
            return Err(AvatarError::TooLarge);
        }
        let kind = ImageKind::sniff(&bytes).ok_or(AvatarError::NotAnImage)?;
        let size = imagesize::blob_size(&bytes).ok();
        let sha256 = fleetdesk_kernel::digest::sha256_hex(&bytes);
        Ok(AvatarImage {
            kind,
            sha256,
            width: size.map(|s| s.width as u32),
            height: size.map(|s| s.height as u32),
            bytes,
        })
    }

    /// Content-addressed storage key, so the same image is never stored twice.
    pub fn storage_key(&self) -> String {
        format!("avatars/{}.{}", self.sha256, self.kind.extension())
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use base64::engine::general_purpose::STANDARD;

    /// A valid 1x1 PNG.
    pub const PNG_1X1: &[u8] = &[
        0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A, 0x00, 0x00, 0x00, 0x0D, 0x49, 0x48, 0x44,
        0x52, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x01, 0x08, 0x06, 0x00, 0x00, 0x00, 0x1F,
        0x15, 0xC4, 0x89, 0x00, 0x00, 0x00, 0x0A, 0x49, 0x44, 0x41, 0x54, 0x78, 0x9C, 0x63, 0x00,
        0x01, 0x00, 0x00, 0x05, 0x00, 0x01, 0x0D, 0x0A, 0x2D, 0xB4, 0x00, 0x00, 0x00, 0x00, 0x49,
        0x45, 0x4E, 0x44, 0xAE, 0x42, 0x60, 0x82,
    ];

    #[test]
    fn judges_the_type_from_the_bytes_not_the_prefix() {
        let b64 = format!("data:image/jpeg;base64,{}", STANDARD.encode(PNG_1X1));
        let img = AvatarImage::decode(&b64).unwrap();
        assert_eq!(img.kind, ImageKind::Png);
        assert_eq!((img.width, img.height), (Some(1), Some(1)));
        assert!(img.storage_key().ends_with(".png"));
    }

    #[test]
    fn the_same_bytes_hash_the_same() {
        let a = AvatarImage::decode(&STANDARD.encode(PNG_1X1)).unwrap();
        let b = AvatarImage::decode(&format!(
            "data:image/png;base64,{}",
            STANDARD.encode(PNG_1X1)
        ))
        .unwrap();
        assert_eq!(a.sha256, b.sha256);
    }

    #[test]
    fn refuses_what_is_not_an_image_or_not_base64() {
        assert_eq!(
            AvatarImage::decode(&STANDARD.encode(b"GIF89a....")).unwrap_err(),
            AvatarError::NotAnImage
        );
        assert_eq!(AvatarImage::decode("%%%").unwrap_err(), AvatarError::Base64);
        assert_eq!(
            AvatarImage::decode("data:image/png;base64,").unwrap_err(),
            AvatarError::Empty
        );
    }

    #[test]
    fn five_megabytes_is_the_limit() {
        let mut at_limit = PNG_1X1.to_vec();
        at_limit.resize(MAX_AVATAR_BYTES, 0);
        assert!(AvatarImage::decode(&STANDARD.encode(&at_limit)).is_ok());
        at_limit.push(0);
        assert_eq!(
            AvatarImage::decode(&STANDARD.encode(&at_limit)).unwrap_err(),
            AvatarError::TooLarge
        );
    }
}
