//! A request body as it arrives: pieces of bytes, read one after another, so a use case can
//! check, hash and store each piece without holding the whole body. The inbound adapter makes
//! it (the HTTP adapter from the connection, bounded by the operation's limit); domain code only
//! reads it.

use bytes::Bytes;
use futures_core::Stream;
use std::pin::Pin;
use std::task::{Context, Poll};

/// Why a body stopped before its end.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BodyError {
    /// More bytes came than the operation takes.
    #[error("the request body is larger than {limit} bytes")]
    TooLarge { limit: u64 },
    /// The body could not be read whole (the connection closed before its end, a malformed
    /// transfer encoding).
    #[error("the request body could not be read: {0}")]
    Read(String),
    /// The body did not arrive within the time the transport gives it.
    #[error("the request body did not arrive within {seconds} s; send it again")]
    TooSlow { seconds: u64 },
}

/// A body read piece by piece; `None` once it has all arrived.
pub type Body = Pin<Box<dyn Stream<Item = Result<Bytes, BodyError>> + Send>>;

/// A body already in memory, as one piece (none when empty): for tests and callers that hold
/// the bytes.
pub fn from_bytes(bytes: Bytes) -> Body {
    Box::pin(Pieces(vec![Ok(bytes)].into_iter().filter(pieces_not_empty)))
}

/// A body of these pieces in order; an `Err` ends it.
pub fn from_pieces(pieces: Vec<Result<Bytes, BodyError>>) -> Body {
    Box::pin(Pieces(pieces.into_iter().filter(pieces_not_empty)))
}

fn pieces_not_empty(piece: &Result<Bytes, BodyError>) -> bool {
    !matches!(piece, Ok(b) if b.is_empty())
}

struct Pieces<I>(I);

impl<I: Iterator<Item = Result<Bytes, BodyError>> + Unpin> Stream for Pieces<I> {
    type Item = Result<Bytes, BodyError>;

    fn poll_next(mut self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        Poll::Ready(self.0.next())
    }
}

/// Reads a whole body of at most `limit` bytes into one buffer ([`BodyError::TooLarge`] past
/// it, without reading further).
pub async fn read_to_end(mut body: Body, limit: u64) -> Result<Bytes, BodyError> {
    let mut pieces = Vec::new();
    let mut len = 0u64;
    while let Some(piece) = std::future::poll_fn(|cx| body.as_mut().poll_next(cx)).await {
        let piece = piece?;
        len += piece.len() as u64;
        if len > limit {
            return Err(BodyError::TooLarge { limit });
        }
        pieces.push(piece);
    }
    Ok(match pieces.len() {
        0 => Bytes::new(),
        1 => pieces.pop().unwrap_or_default(),
        _ => {
            let mut whole = Vec::with_capacity(len as usize);
            for piece in pieces {
                whole.extend_from_slice(&piece);
            }
            Bytes::from(whole)
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_body_is_read_whole_up_to_its_limit() {
        let body = from_pieces(vec![
            Ok(Bytes::from_static(b"ab")),
            Ok(Bytes::new()),
            Ok(Bytes::from_static(b"cd")),
        ]);
        assert_eq!(read_to_end(body, 4).await.unwrap(), &b"abcd"[..]);
        let body = from_pieces(vec![
            Ok(Bytes::from_static(b"abc")),
            Ok(Bytes::from_static(b"de")),
        ]);
        assert_eq!(
            read_to_end(body, 4).await,
            Err(BodyError::TooLarge { limit: 4 })
        );
        assert_eq!(read_to_end(from_bytes(Bytes::new()), 0).await.unwrap(), "");
        let cut = from_pieces(vec![
            Ok(Bytes::from_static(b"ab")),
            Err(BodyError::Read("closed".into())),
        ]);
        assert!(matches!(read_to_end(cut, 4).await, Err(BodyError::Read(_))));
    }
}
