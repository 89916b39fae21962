//! A raw request body handed to the pipeline as it arrives (the upload PUTs), so no request
//! holds its whole body: the connection's payload is read by a pump beside the operation and
//! passed on piece by piece through a channel of a few pieces.

use actix_web::HttpRequest;
use actix_web::http::header;
use actix_web::web::{self, Bytes};
use fleetdesk_api::ApiError;
use fleetdesk_kernel::ErrorCode;
use fleetdesk_kernel::body::{Body, BodyError};
use futures_util::StreamExt as _;
use std::future::Future;

/// Pieces in the channel between the pump and the operation. With actix's own buffer of the
/// payload (32 KiB, past which it stops reading the socket) this bounds what a request holds
/// before the operation takes it.
const PIECES_IN_FLIGHT: usize = 4;

/// 413 for a body past `limit` bytes.
pub fn too_large(limit: usize) -> ApiError {
    ApiError::new(
        ErrorCode::PayloadTooLarge,
        format!("the request body is larger than {limit} bytes"),
    )
}

/// How long a body of `bytes` may take to arrive (its `Content-Length`, or the operation's
/// limit when it declares none): 10 seconds, and one more for every 16 KiB (a 1 KiB body
/// 10 s, 1 MiB 74 s, 8 MiB 522 s: a client sending at least 16 KiB a second always makes
/// it). A client that sends slower, or stops half way, is answered 408, so no request holds a
/// connection and its buffer for as long as it likes.
pub fn deadline(bytes: usize) -> std::time::Duration {
    std::time::Duration::from_secs(10 + (bytes / (16 * 1024)) as u64)
}

/// 408 for a body that did not arrive within `allowed`.
pub fn too_slow(allowed: std::time::Duration) -> ApiError {
    ApiError::new(
        ErrorCode::RequestTimeout,
        format!(
            "the request body did not arrive within {} s; send it again",
            allowed.as_secs()
        ),
    )
    .with_field(fleetdesk_api::input::REQUEST_BODY)
}

/// The `Content-Length` of the request, if any; 413 when it is past `limit`.
pub fn declared_within(req: &HttpRequest, limit: usize) -> Result<Option<usize>, ApiError> {
    let declared = req
        .headers()
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<usize>().ok());
    if declared.is_some_and(|len| len > limit) {
        return Err(too_large(limit));
    }
    Ok(declared)
}

/// The body as a [`Body`] ending with [`BodyError::TooLarge`] past `limit` bytes, and the
/// pump that feeds it, to be run beside the operation until both end; the pump answers the
/// bytes it read. A `Content-Length` past
/// the limit is 413 at once, without reading anything.
///
/// When the operation stops reading early (it refused the request, or stored what it
/// needed), the pump reads and drops the rest of the body up to the limit, so the client,
/// still writing, gets the answer on a connection that stays usable, as when the whole body
/// was read first. Past the limit, or on a read error, it stops: the answer then closes the
/// connection.
pub fn streamed(
    payload: web::Payload,
    req: &HttpRequest,
    limit: usize,
) -> Result<(Body, impl Future<Output = usize>), ApiError> {
    let declared = declared_within(req, limit)?;
    let (tx, rx) = tokio::sync::mpsc::channel::<Result<Bytes, BodyError>>(PIECES_IN_FLIGHT);
    let allowed = deadline(declared.unwrap_or(limit));
    let late = tx.clone();
    let pump = async move {
        let mut payload = payload;
        let mut seen = 0usize;
        // Whether the operation still reads.
        let mut reading = true;
        while let Some(piece) = payload.next().await {
            let piece = match piece {
                Ok(piece) => piece,
                Err(e) => {
                    if reading {
                        let _ = tx.send(Err(BodyError::Read(e.to_string()))).await;
                    }
                    return seen;
                }
            };
            seen += piece.len();
            if seen > limit {
                if reading {
                    let _ = tx
                        .send(Err(BodyError::TooLarge {
                            limit: limit as u64,
                        }))
                        .await;
                }
                return seen;
            }
            if reading && tx.send(Ok(piece)).await.is_err() {
                reading = false;
            }
        }
        seen
    };
    // A body that takes longer than its deadline ends with `TooSlow` (408), and so does the
    // pump: the connection is not held for a client that trickles.
    let pump = async move {
        match tokio::time::timeout(allowed, pump).await {
            Ok(seen) => seen,
            Err(_) => {
                let seconds = allowed.as_secs();
                let said = late.send(Err(BodyError::TooSlow { seconds }));
                let _ = tokio::time::timeout(std::time::Duration::from_secs(1), said).await;
                0
            }
        }
    };
    let body = futures_util::stream::unfold(rx, |mut rx| async move {
        rx.recv().await.map(|piece| (piece, rx))
    });
    Ok((Box::pin(body), pump))
}
