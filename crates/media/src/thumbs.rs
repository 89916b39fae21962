//! The library's thumbnails: where one is stored, what it is made of, and what stands in when
//! a picture cannot be made ([`crate::thumbnail`] makes the small image itself).
//!
//! A thumbnail is made once, when its image enters the library (an upload, an inline draft
//! image, a video's poster), stored next to the files under the SHA-256 of the image it was
//! made from, and recorded on the item (`thumb_key`, `thumb_mime`). An item without one (stored
//! before thumbnails existed, or whose thumbnail could not be stored) gets it on the first
//! request of its thumb link.

use crate::thumbnail::{self, Thumbnail};
use bytes::Bytes;
use fleetdesk_kernel::blob::BlobStore;
use fleetdesk_kernel::digest::sha256_hex;
use fleetdesk_kernel::media::{MediaKind, MediaType};

/// A thumbnail recorded on a library item: the object served and its type.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ThumbRef {
    pub key: String,
    pub mime_type: MediaType,
}

/// Content-addressed key of the thumbnail made from the image whose SHA-256 is `source_sha256`:
/// the same image always gives the same key, so making it again (two first requests at once)
/// writes the same object.
pub fn thumb_key(source_sha256: &str, t: MediaType) -> String {
    format!(
        "thumbs/{}/{source_sha256}.{}",
        &source_sha256[..2],
        t.extension()
    )
}

/// The type of a thumbnail [`thumbnail::make`] encoded (`image/jpeg` or `image/png`).
fn thumb_type(t: &Thumbnail) -> MediaType {
    MediaType::from_mime(t.mime_type).unwrap_or(MediaType::Jpeg)
}

/// What a thumbnail is made of: the image itself, or a video's poster; `None` for a video
/// without a poster (it has no thumbnail).
pub fn source_of(
    media_type: MediaType,
    file_key: &str,
    poster: Option<&(String, MediaType)>,
) -> Option<(String, MediaType)> {
    match media_type.kind() {
        MediaKind::Image => Some((file_key.to_owned(), media_type)),
        MediaKind::Video => poster.cloned(),
    }
}

/// The outcome of an attempt to make a thumbnail.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Made {
    /// A small image to store at `key`.
    Small { key: String, thumbnail: Thumbnail },
    /// The source cannot be made into a picture (it does not decode, or its canvas is beyond
    /// the decoder's limits): it stands as its own thumbnail, as before thumbnails existed. It is
    /// recorded as such, so the attempt is made once.
    Source(ThumbRef),
}

impl Made {
    /// What the item records.
    pub fn thumb_ref(&self) -> ThumbRef {
        match self {
            Made::Small { key, thumbnail } => ThumbRef {
                key: key.clone(),
                mime_type: thumb_type(thumbnail),
            },
            Made::Source(r) => r.clone(),
        }
    }
}

/// Decides what stands as the thumbnail of `source` (stored at `source_key`), given what the
/// thumbnailer made of it.
pub fn decide(
    source_key: &str,
    source_type: MediaType,
    source_sha256: &str,
    made: Result<Thumbnail, String>,
) -> Made {
    match made {
        Ok(thumbnail) => Made::Small {
            key: thumb_key(source_sha256, thumb_type(&thumbnail)),
            thumbnail,
        },
        Err(_) => Made::Source(ThumbRef {
            key: source_key.to_owned(),
            mime_type: source_type,
        }),
    }
}

/// Makes the thumbnail of `source` on a blocking thread (the SHA-256 is computed there when not
/// given). A thumbnailer that fails, or panics, leaves the source as its own thumbnail.
pub async fn make(
    source: Bytes,
    source_key: &str,
    source_type: MediaType,
    source_sha256: Option<String>,
) -> Made {
    let key = source_key.to_owned();
    let made = tokio::task::spawn_blocking(move || {
        let sha = source_sha256.unwrap_or_else(|| sha256_hex(&source));
        (sha, thumbnail::make(&source).map_err(|e| e.to_string()))
    })
    .await;
    match made {
        Ok((sha, made)) => {
            if let Err(e) = &made {
                tracing::info!(key, error = %e, "no thumbnail: the image stands as its own");
            }
            decide(source_key, source_type, &sha, made)
        }
        Err(e) => {
            tracing::warn!(key, error = %e, "the thumbnail task failed");
            decide(source_key, source_type, "", Err(e.to_string()))
        }
    }
}

/// Makes and stores the thumbnail of `source`; `None` when storing it fails (logged: the item
/// is then recorded without one, and gets it on its first thumb request).
pub async fn make_and_store(
    blobs: &dyn BlobStore,
    source: Bytes,
    source_key: &str,
    source_type: MediaType,
    source_sha256: Option<String>,
) -> Option<ThumbRef> {
    let made = make(source, source_key, source_type, source_sha256).await;
    match store(blobs, &made).await {
        Ok(()) => Some(made.thumb_ref()),
        Err(e) => {
            tracing::warn!(key = source_key, error = %e, "storing a thumbnail failed");
            None
        }
    }
}

/// Writes a made thumbnail (nothing to write when the source stands as its own).
pub async fn store(blobs: &dyn BlobStore, made: &Made) -> anyhow::Result<()> {
    if let Made::Small { key, thumbnail } = made {
        blobs
            .put(key, Bytes::from(thumbnail.bytes.clone()))
            .await
            .map_err(|e| anyhow::anyhow!(e))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const SHA: &str = "ab12cd34ef56ab12cd34ef56ab12cd34ef56ab12cd34ef56ab12cd34ef56ab12";

    fn small(mime_type: &'static str) -> Thumbnail {
        Thumbnail {
            bytes: vec![1, 2, 3],
            mime_type,
            width: 320,
            height: 200,
        }
    }

    #[test]
    fn a_thumbnail_is_stored_by_its_source_next_to_the_files() {
        assert_eq!(
            thumb_key(SHA, MediaType::Jpeg),
            format!("thumbs/ab/{SHA}.jpg")
        );
        assert_eq!(
            thumb_key(SHA, MediaType::Png),
            format!("thumbs/ab/{SHA}.png")
        );
        let made = decide(
            "media/ab/x.webp",
            MediaType::Webp,
            SHA,
            Ok(small("image/png")),
        );
        assert_eq!(
            made.thumb_ref(),
            ThumbRef {
                key: format!("thumbs/ab/{SHA}.png"),
                mime_type: MediaType::Png
            }
        );
    }

    #[test]
    fn a_source_that_cannot_be_made_small_stands_as_its_own_thumbnail() {
        let made = decide("posters/ab/p.png", MediaType::Png, SHA, Err("bad".into()));
        assert_eq!(
            made,
            Made::Source(ThumbRef {
                key: "posters/ab/p.png".into(),
                mime_type: MediaType::Png
            })
        );
    }

    #[test]
    fn an_image_is_made_from_itself_a_video_from_its_poster() {
        let poster = ("posters/ab/p.jpg".to_owned(), MediaType::Jpeg);
        assert_eq!(
            source_of(MediaType::Webp, "media/ab/x.webp", Some(&poster)),
            Some(("media/ab/x.webp".into(), MediaType::Webp))
        );
        assert_eq!(
            source_of(MediaType::Mp4, "uploads/u", Some(&poster)),
            Some(poster.clone())
        );
        assert_eq!(source_of(MediaType::Webm, "uploads/u", None), None);
    }

    #[tokio::test]
    async fn making_runs_on_a_blocking_thread_and_keys_by_the_source() {
        let made = make(
            Bytes::from_static(b"no image"),
            "media/k",
            MediaType::Png,
            None,
        )
        .await;
        assert!(matches!(made, Made::Source(_)));
        let mut png = std::io::Cursor::new(Vec::new());
        image::DynamicImage::ImageRgb8(image::RgbImage::new(640, 64))
            .write_to(&mut png, image::ImageFormat::Png)
            .unwrap();
        let png = Bytes::from(png.into_inner());
        let sha = sha256_hex(&png);
        match make(png, "media/k", MediaType::Png, None).await {
            Made::Small { key, thumbnail } => {
                assert_eq!(key, format!("thumbs/{}/{sha}.jpg", &sha[..2]));
                assert_eq!((thumbnail.width, thumbnail.height), (320, 32));
            }
            other => panic!("{other:?}"),
        }
    }
}
