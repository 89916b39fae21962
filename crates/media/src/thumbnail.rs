//! Thumbnails: every image the service serves through a `thumb_url` is a real small image,
//! made once when the image is stored. The longest side is at most [`LONGEST_SIDE`] pixels
//! (a smaller image keeps its size); an opaque image becomes a JPEG, one with transparency a
//! PNG.

use image::codecs::jpeg::JpegEncoder;
use image::codecs::png::PngEncoder;
use image::{DynamicImage, ImageEncoder, ImageReader, Limits};
use std::io::Cursor;

/// The longest side of a thumbnail, in pixels.
pub const LONGEST_SIDE: u32 = 320;
/// JPEG quality of an opaque thumbnail.
const JPEG_QUALITY: u8 = 82;
/// The largest image decoded for a thumbnail: 16384 pixels a side, 512 MiB of pixels, so that
/// a small file claiming a huge canvas is refused instead of exhausting memory.
const MAX_SIDE: u32 = 16_384;
const MAX_ALLOC: u64 = 512 * 1024 * 1024;

/// A stored thumbnail.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Thumbnail {
    pub bytes: Vec<u8>,
    /// `image/jpeg` or `image/png`.
    pub mime_type: &'static str,
    pub width: u32,
    pub height: u32,
}

#[derive(Debug, thiserror::Error)]
pub enum ThumbnailError {
    #[error("the image cannot be decoded: {0}")]
    Decode(String),
    #[error("the thumbnail cannot be encoded: {0}")]
    Encode(String),
}

/// The thumbnail of a JPEG, PNG or WebP image (the format is judged from the bytes). CPU work:
/// call it from a blocking thread.
pub fn make(bytes: &[u8]) -> Result<Thumbnail, ThumbnailError> {
    let mut reader = ImageReader::new(Cursor::new(bytes))
        .with_guessed_format()
        .map_err(|e| ThumbnailError::Decode(e.to_string()))?;
    let mut limits = Limits::default();
    limits.max_image_width = Some(MAX_SIDE);
    limits.max_image_height = Some(MAX_SIDE);
    limits.max_alloc = Some(MAX_ALLOC);
    reader.limits(limits);
    let image = reader
        .decode()
        .map_err(|e| ThumbnailError::Decode(e.to_string()))?;
    let small = if image.width().max(image.height()) > LONGEST_SIDE {
        image.thumbnail(LONGEST_SIDE, LONGEST_SIDE)
    } else {
        image
    };
    encode(small)
}

fn encode(image: DynamicImage) -> Result<Thumbnail, ThumbnailError> {
    let (width, height) = (image.width(), image.height());
    let mut bytes = Vec::new();
    let encoded = if image.color().has_alpha() {
        let rgba = image.into_rgba8();
        PngEncoder::new(&mut bytes)
            .write_image(&rgba, width, height, image::ExtendedColorType::Rgba8)
            .map(|()| "image/png")
    } else {
        let rgb = image.into_rgb8();
        JpegEncoder::new_with_quality(&mut bytes, JPEG_QUALITY)
            .write_image(&rgb, width, height, image::ExtendedColorType::Rgb8)
            .map(|()| "image/jpeg")
    };
    let mime_type = encoded.map_err(|e| ThumbnailError::Encode(e.to_string()))?;
    Ok(Thumbnail {
        bytes,
        mime_type,
        width,
        height,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use image::{ImageFormat, Rgb, RgbImage, Rgba, RgbaImage};

    fn encoded(image: DynamicImage, format: ImageFormat) -> Vec<u8> {
        let mut out = Cursor::new(Vec::new());
        image
            .write_to(&mut out, format)
            .expect("encode the fixture");
        out.into_inner()
    }

    fn decoded(t: &Thumbnail) -> DynamicImage {
        image::load_from_memory(&t.bytes).expect("a thumbnail decodes")
    }

    #[test]
    fn a_large_opaque_image_becomes_a_jpeg_whose_longest_side_is_320() {
        let wide = DynamicImage::ImageRgb8(RgbImage::from_pixel(1200, 600, Rgb([200, 10, 10])));
        let t = make(&encoded(wide, ImageFormat::Png)).unwrap();
        assert_eq!((t.mime_type, t.width, t.height), ("image/jpeg", 320, 160));
        let back = decoded(&t);
        assert_eq!((back.width(), back.height()), (320, 160));
        let tall = DynamicImage::ImageRgb8(RgbImage::from_pixel(500, 1000, Rgb([0, 0, 0])));
        let t = make(&encoded(tall, ImageFormat::Jpeg)).unwrap();
        assert_eq!((t.width, t.height), (160, 320));
    }

    #[test]
    fn transparency_is_kept_as_png_and_a_small_image_keeps_its_size() {
        let clear = DynamicImage::ImageRgba8(RgbaImage::from_pixel(100, 40, Rgba([0, 0, 0, 0])));
        let t = make(&encoded(clear, ImageFormat::Png)).unwrap();
        assert_eq!((t.mime_type, t.width, t.height), ("image/png", 100, 40));
        assert_eq!(decoded(&t).to_rgba8().get_pixel(5, 5)[3], 0);
    }

    #[test]
    fn webp_is_read() {
        let img = DynamicImage::ImageRgba8(RgbaImage::from_pixel(640, 640, Rgba([9, 9, 9, 255])));
        let t = make(&encoded(img, ImageFormat::WebP)).unwrap();
        assert_eq!((t.width, t.height), (320, 320));
    }

    #[test]
    fn bytes_that_are_no_image_are_refused() {
        assert!(matches!(
            make(b"not an image"),
            Err(ThumbnailError::Decode(_))
        ));
        // A PNG whose header was altered (a huge canvas, a broken checksum) is refused.
        let mut png = encoded(
            DynamicImage::ImageRgb8(RgbImage::from_pixel(1, 1, Rgb([0, 0, 0]))),
            ImageFormat::Png,
        );
        png[16..20].copy_from_slice(&100_000u32.to_be_bytes());
        assert!(make(&png).is_err());
    }
}
