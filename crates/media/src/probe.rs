//! Reading a video's duration, width and height from its container (MP4, MOV, WebM).
//!
//! Only the container's headers are read, never the media: for MP4 and MOV the box headers of
//! the top level and the `moov` box (`mdat` is skipped by seeking, wherever it sits); for WebM
//! the EBML header, SeekHead, Info, Tracks and the index elements, never the Clusters. A 500 MB
//! upload stored in parts is probed by reading a few kilobytes of it.
//!
//! The boxes are decoded by `mp4-atom`, the EBML by `matroska-demuxer`; see "Video probing" in
//! `docs/decisions.md` for why these two.

use fleetdesk_kernel::media::MediaType;
use matroska_demuxer::{DemuxError, MatroskaFile, TrackType};
use mp4_atom::{Atom, Decode, FourCC, Hdlr, Header, Mvhd, ReadFrom, Tkhd};
use std::io::{self, Read, Seek, SeekFrom};

/// What the container says about a video. A field the container does not carry is `None`
/// (a WebM recorded by a browser has no duration, a fragmented MP4 none in its `moov`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct VideoInfo {
    pub duration_ms: Option<i64>,
    pub width: Option<i32>,
    pub height: Option<i32>,
}

/// Why a video's container could not be read.
#[derive(Debug, thiserror::Error)]
pub enum ProbeError {
    /// The reader failed (storage), as opposed to the file being bad.
    #[error("reading the file failed")]
    Io(#[source] io::Error),
    /// Not a valid container of the given type, or cut short.
    #[error("{0}")]
    Malformed(String),
    /// The given type is an image type.
    #[error("the file type is not a video type")]
    NotVideo,
}

impl From<io::Error> for ProbeError {
    fn from(e: io::Error) -> Self {
        if e.kind() == io::ErrorKind::UnexpectedEof {
            ProbeError::Malformed("the file ends early".to_owned())
        } else {
            ProbeError::Io(e)
        }
    }
}

/// The largest `moov` box read: sample tables of hours of video fit in a few MiB.
const MAX_MOOV_BYTES: u64 = 32 * 1024 * 1024;

/// Reads the container headers only: box/element headers and the metadata boxes (moov /
/// Info+Tracks), seeking past media data.
///
/// `reader` holds the whole file, `size` bytes long; it is read from its start. The width and
/// height are those of the first video track: the display size of its track header for MP4
/// and MOV, `PixelWidth` and `PixelHeight` for WebM.
pub fn probe_video<R: Read + Seek>(
    mut reader: R,
    size: u64,
    media_type: MediaType,
) -> Result<VideoInfo, ProbeError> {
    reader.seek(SeekFrom::Start(0))?;
    match media_type {
        MediaType::Mp4 | MediaType::Mov => probe_iso(&mut reader, size),
        MediaType::Webm => probe_webm(reader),
        MediaType::Jpeg | MediaType::Png | MediaType::Webp => Err(ProbeError::NotVideo),
    }
}

/// MP4 and MOV: walks the top-level boxes by their headers, seeking past each one, until
/// `moov`, which is read whole (it is small) and searched for `mvhd` and the video `trak`.
fn probe_iso<R: Read + Seek>(r: &mut R, size: u64) -> Result<VideoInfo, ProbeError> {
    let mut at = 0;
    while at < size {
        let header = Header::read_from(r).map_err(iso_error)?;
        let body_at = r.stream_position()?;
        let body_len = match header.size {
            Some(n) => n as u64,
            None => size.saturating_sub(body_at), // extends to the end of the file
        };
        let end = body_at
            .checked_add(body_len)
            .filter(|&end| end <= size)
            .ok_or_else(|| malformed(format!("box `{}` runs past the end", header.kind)))?;
        if header.kind == FourCC::new(b"moov") {
            if body_len > MAX_MOOV_BYTES {
                return Err(malformed("the moov box is larger than 32 MiB"));
            }
            let mut moov = vec![0; body_len as usize];
            r.read_exact(&mut moov)?;
            return read_moov(&moov);
        }
        at = r.seek(SeekFrom::Start(end))?;
    }
    Err(malformed("no moov box"))
}

fn read_moov(moov: &[u8]) -> Result<VideoInfo, ProbeError> {
    let mut mvhd = None;
    let mut video = None;
    for child in children(moov) {
        let (kind, mut body) = child?;
        if kind == Mvhd::KIND {
            mvhd = Some(Mvhd::decode_body(&mut body).map_err(iso_error)?);
        } else if kind == FourCC::new(b"trak") && video.is_none() {
            video = video_track_header(body)?;
        }
    }
    let mvhd = mvhd.ok_or_else(|| malformed("the moov box has no mvhd"))?;
    let dimension = |v: u16| (v > 0).then_some(i32::from(v));
    Ok(VideoInfo {
        duration_ms: iso_duration_ms(mvhd.duration, mvhd.timescale),
        width: video.as_ref().and_then(|t| dimension(t.width.integer())),
        height: video.as_ref().and_then(|t| dimension(t.height.integer())),
    })
}

/// The track header of a `trak` that is a video track (handler `vide`).
fn video_track_header(trak: &[u8]) -> Result<Option<Tkhd>, ProbeError> {
    let mut tkhd = None;
    let mut is_video = false;
    for child in children(trak) {
        let (kind, mut body) = child?;
        if kind == Tkhd::KIND {
            tkhd = Some(Tkhd::decode_body(&mut body).map_err(iso_error)?);
        } else if kind == FourCC::new(b"mdia") {
            for grandchild in children(body) {
                let (kind, mut body) = grandchild?;
                if kind == Hdlr::KIND {
                    // The handler's name is a string some writers do not end or encode as
                    // mp4-atom expects; an undecodable one only leaves the track unrecognised.
                    is_video = Hdlr::decode_body(&mut body)
                        .is_ok_and(|hdlr| hdlr.handler == FourCC::new(b"vide"));
                }
            }
        }
    }
    Ok(tkhd.filter(|_| is_video))
}

/// The child boxes of a box body, as (type, body). QuickTime may end a list with a 32-bit zero,
/// so fewer than 8 bytes left over end the list.
fn children(mut data: &[u8]) -> impl Iterator<Item = Result<(FourCC, &[u8]), ProbeError>> {
    std::iter::from_fn(move || {
        if data.len() < 8 {
            return None;
        }
        let header = match Header::decode(&mut data) {
            Ok(header) => header,
            Err(e) => {
                data = &[];
                return Some(Err(iso_error(e)));
            }
        };
        let body_len = header.size.unwrap_or(data.len());
        if body_len > data.len() {
            data = &[];
            return Some(Err(malformed(format!(
                "box `{}` runs past its parent",
                header.kind
            ))));
        }
        let (body, rest) = data.split_at(body_len);
        data = rest;
        Some(Ok((header.kind, body)))
    })
}

/// `duration` in units of `timescale` per second, rounded to milliseconds; `None` when unknown
/// (zero, or all ones).
fn iso_duration_ms(duration: u64, timescale: u32) -> Option<i64> {
    if timescale == 0 || duration == 0 || duration == u64::from(u32::MAX) || duration == u64::MAX {
        return None;
    }
    let timescale = u128::from(timescale);
    let ms = (u128::from(duration) * 1000 + timescale / 2) / timescale;
    i64::try_from(ms).ok()
}

/// WebM: matroska-demuxer reads the EBML header, the SeekHead and what it points to (Info,
/// Tracks, Cues, Tags), or walks the top-level elements up to the first Cluster when there is
/// no SeekHead (MediaRecorder).
fn probe_webm<R: Read + Seek>(reader: R) -> Result<VideoInfo, ProbeError> {
    let file = MatroskaFile::open(reader).map_err(webm_error)?;
    let doc_type = file.ebml_header().doc_type();
    if doc_type != "webm" {
        return Err(malformed(format!(
            "the DocType is `{doc_type}`, not `webm`"
        )));
    }
    let info = file.info();
    // Duration counts ticks of TimestampScale nanoseconds.
    let duration_ms = info
        .duration()
        .map(|ticks| ticks * info.timestamp_scale().get() as f64 / 1e6)
        .filter(|ms| ms.is_finite() && *ms > 0.0 && *ms < i64::MAX as f64)
        .map(|ms| ms.round() as i64);
    let video = file
        .tracks()
        .iter()
        .filter(|track| track.track_type() == TrackType::Video)
        .find_map(|track| track.video());
    let dimension = |v: u64| i32::try_from(v).ok();
    Ok(VideoInfo {
        duration_ms,
        width: video.and_then(|v| dimension(v.pixel_width().get())),
        height: video.and_then(|v| dimension(v.pixel_height().get())),
    })
}

fn malformed(message: impl Into<String>) -> ProbeError {
    ProbeError::Malformed(message.into())
}

fn iso_error(e: mp4_atom::Error) -> ProbeError {
    match e {
        mp4_atom::Error::Io(e) => e.into(),
        e => malformed(format!("bad box: {e}")),
    }
}

fn webm_error(e: DemuxError) -> ProbeError {
    match e {
        DemuxError::IoError(e) => e.into(),
        e => malformed(format!("bad WebM: {e}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Cursor;

    // Made by tests/fixtures/generate.sh; ffprobe gives 1.520 s for the ISO files, 1.527 s for
    // clip.webm and no duration for recorder.webm; all are 64x48 with the audio track first.
    const FASTSTART_MP4: &[u8] = include_bytes!("../tests/fixtures/faststart.mp4");
    const MOOV_AT_END_MP4: &[u8] = include_bytes!("../tests/fixtures/moov_at_end.mp4");
    const CLIP_MOV: &[u8] = include_bytes!("../tests/fixtures/clip.mov");
    const CLIP_WEBM: &[u8] = include_bytes!("../tests/fixtures/clip.webm");
    const RECORDER_WEBM: &[u8] = include_bytes!("../tests/fixtures/recorder.webm");

    const FIXTURES: [(&str, &[u8], MediaType); 5] = [
        ("faststart.mp4", FASTSTART_MP4, MediaType::Mp4),
        ("moov_at_end.mp4", MOOV_AT_END_MP4, MediaType::Mp4),
        ("clip.mov", CLIP_MOV, MediaType::Mov),
        ("clip.webm", CLIP_WEBM, MediaType::Webm),
        ("recorder.webm", RECORDER_WEBM, MediaType::Webm),
    ];

    fn probe(bytes: &[u8], t: MediaType) -> Result<VideoInfo, ProbeError> {
        probe_video(Cursor::new(bytes), bytes.len() as u64, t)
    }

    fn info(duration_ms: Option<i64>) -> VideoInfo {
        VideoInfo {
            duration_ms,
            width: Some(64),
            height: Some(48),
        }
    }

    #[test]
    fn reads_duration_and_size_from_each_container() {
        assert_eq!(
            probe(FASTSTART_MP4, MediaType::Mp4).unwrap(),
            info(Some(1520))
        );
        assert_eq!(
            probe(MOOV_AT_END_MP4, MediaType::Mp4).unwrap(),
            info(Some(1520))
        );
        assert_eq!(probe(CLIP_MOV, MediaType::Mov).unwrap(), info(Some(1520)));
        assert_eq!(probe(CLIP_WEBM, MediaType::Webm).unwrap(), info(Some(1527)));
    }

    #[test]
    fn a_recording_without_duration_has_none() {
        assert_eq!(probe(RECORDER_WEBM, MediaType::Webm).unwrap(), info(None));
    }

    #[test]
    fn rounds_to_the_nearest_millisecond_and_knows_unknown_durations() {
        assert_eq!(iso_duration_ms(1520, 1000), Some(1520));
        assert_eq!(iso_duration_ms(136_500, 90_000), Some(1517)); // 1516.67
        assert_eq!(iso_duration_ms(2, 3000), Some(1));
        assert_eq!(iso_duration_ms(0, 1000), None);
        assert_eq!(iso_duration_ms(u64::from(u32::MAX), 1000), None);
        assert_eq!(iso_duration_ms(1000, 0), None);
    }

    #[test]
    fn an_image_type_is_not_probed() {
        assert!(matches!(
            probe(FASTSTART_MP4, MediaType::Png),
            Err(ProbeError::NotVideo)
        ));
    }

    #[test]
    fn garbage_and_cut_files_are_errors() {
        let garbage = b"this is not a video, just some text that goes on for a while".repeat(20);
        for t in [MediaType::Mp4, MediaType::Mov, MediaType::Webm] {
            assert!(
                matches!(probe(b"", t), Err(ProbeError::Malformed(_))),
                "{t}"
            );
            assert!(
                matches!(probe(&garbage, t), Err(ProbeError::Malformed(_))),
                "{t}"
            );
        }
        // The other container's bytes.
        assert!(probe(CLIP_WEBM, MediaType::Mp4).is_err());
        assert!(probe(FASTSTART_MP4, MediaType::Webm).is_err());
        // Cut before moov, or inside the WebM headers.
        let half = MOOV_AT_END_MP4.len() / 2;
        assert!(matches!(
            probe(&MOOV_AT_END_MP4[..half], MediaType::Mp4),
            Err(ProbeError::Malformed(_))
        ));
        assert!(matches!(
            probe(&CLIP_WEBM[..200], MediaType::Webm),
            Err(ProbeError::Malformed(_))
        ));
    }

    /// Every prefix of every fixture, and every byte of its first and last 2 KiB (the headers,
    /// moov at either end, Cues) overwritten, gives a value or an error: never a panic.
    #[test]
    fn no_cut_or_damaged_header_panics() {
        for (name, bytes, t) in FIXTURES {
            for len in 0..bytes.len() {
                let _ = probe(&bytes[..len], t);
            }
            let mut damaged = bytes.to_vec();
            let edges = (0..2048).chain(bytes.len() - 2048..bytes.len());
            for i in edges {
                for value in [0x00, 0xFF, bytes[i] ^ 0x80, bytes[i].wrapping_add(1)] {
                    damaged[i] = value;
                    let result = std::panic::catch_unwind(|| probe(&damaged, t));
                    assert!(
                        result.is_ok(),
                        "{name}: byte {i} set to {value:#04x} panics"
                    );
                }
                damaged[i] = bytes[i];
            }
        }
    }

    /// Counts the bytes the probe pulls from the file.
    struct Counting<R> {
        inner: R,
        read: u64,
    }

    impl<R: Read> Read for Counting<R> {
        fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
            let n = self.inner.read(buf)?;
            self.read += n as u64;
            Ok(n)
        }
    }

    impl<R: Seek> Seek for Counting<R> {
        fn seek(&mut self, pos: SeekFrom) -> io::Result<u64> {
            self.inner.seek(pos)
        }
    }

    const EXTRA: usize = 8 * 1024 * 1024;

    /// Stand-in media bytes.
    fn media(len: usize) -> impl Iterator<Item = u8> {
        (0..len).map(|i| (i % 251) as u8)
    }

    /// The file with `EXTRA` more bytes of media at the end of its `mdat` box; sample offsets
    /// stay valid because mdat keeps its start.
    fn with_big_mdat(file: &[u8]) -> Vec<u8> {
        let mut out = Vec::with_capacity(file.len() + EXTRA);
        let mut at = 0;
        while at < file.len() {
            let len = u32::from_be_bytes(file[at..at + 4].try_into().unwrap()) as usize;
            if &file[at + 4..at + 8] == b"mdat" {
                out.extend_from_slice(&((len + EXTRA) as u32).to_be_bytes());
                out.extend_from_slice(&file[at + 4..at + len]);
                out.extend(media(EXTRA));
            } else {
                out.extend_from_slice(&file[at..at + len]);
            }
            at += len;
        }
        out
    }

    fn position(haystack: &[u8], needle: &[u8]) -> usize {
        haystack
            .windows(needle.len())
            .position(|w| w == needle)
            .unwrap()
    }

    const CLUSTER_ID: [u8; 4] = [0x1F, 0x43, 0xB6, 0x75];
    const CUES_ID: [u8; 4] = [0x1C, 0x53, 0xBB, 0x6B];

    /// clip.webm with copies of its Cluster appended after the Cues (Segment size adjusted):
    /// a parser that follows the SeekHead never reaches them.
    fn webm_with_clusters_after_cues() -> Vec<u8> {
        // The SeekHead names the Cues too: look for them after the Cluster.
        let start = position(CLIP_WEBM, &CLUSTER_ID);
        let cluster = &CLIP_WEBM[start..start + position(&CLIP_WEBM[start..], &CUES_ID)];
        let mut out = CLIP_WEBM.to_vec();
        while out.len() < CLIP_WEBM.len() + EXTRA {
            out.extend_from_slice(cluster);
        }
        // The Segment's size is an 8-byte EBML number right after its ID, at byte 40.
        assert_eq!(&out[36..41], &[0x18, 0x53, 0x80, 0x67, 0x01]);
        let mut size = [0; 8];
        size[1..].copy_from_slice(&out[41..48]);
        let size = u64::from_be_bytes(size) + (out.len() - CLIP_WEBM.len()) as u64;
        out[41..48].copy_from_slice(&size.to_be_bytes()[1..]);
        out
    }

    /// recorder.webm going on for `EXTRA` more bytes of Clusters, as a long recording does:
    /// Segment and Clusters have unknown sizes, so more Clusters can simply follow.
    fn long_recording() -> Vec<u8> {
        let clusters = &RECORDER_WEBM[position(RECORDER_WEBM, &CLUSTER_ID)..];
        let mut out = RECORDER_WEBM.to_vec();
        while out.len() < RECORDER_WEBM.len() + EXTRA {
            out.extend_from_slice(clusters);
        }
        out
    }

    #[test]
    fn reads_only_headers_of_a_file_of_many_megabytes() {
        let cases = [
            (
                "faststart.mp4",
                with_big_mdat(FASTSTART_MP4),
                MediaType::Mp4,
                Some(1520),
            ),
            (
                "moov_at_end.mp4",
                with_big_mdat(MOOV_AT_END_MP4),
                MediaType::Mp4,
                Some(1520),
            ),
            (
                "clip.mov",
                with_big_mdat(CLIP_MOV),
                MediaType::Mov,
                Some(1520),
            ),
            (
                "clip.webm",
                webm_with_clusters_after_cues(),
                MediaType::Webm,
                Some(1527),
            ),
            ("recorder.webm", long_recording(), MediaType::Webm, None),
        ];
        for (name, file, t, duration_ms) in cases {
            let mut reader = Counting {
                inner: Cursor::new(&file),
                read: 0,
            };
            let got = probe_video(&mut reader, file.len() as u64, t).unwrap();
            assert_eq!(got, info(duration_ms), "{name}");
            eprintln!("{name}: read {} of {} bytes", reader.read, file.len());
            assert!(file.len() > EXTRA, "{name}");
            assert!(
                reader.read < 256 * 1024,
                "{name}: read {} bytes",
                reader.read
            );
        }
    }
}
