//! Endpoint secrets and signatures. A secret is 24 to 64 random bytes, shown once as `whsec_`
//! and their standard base64. A signature is `v1,` and the base64 of HMAC-SHA256 under the
//! secret's bytes of `{msg_id}.{timestamp}.{body}`; the `webhook-signature` header lists one
//! per secret, separated by a space, so that during a rotation the new secret and the old one
//! sign side by side (for 24 hours) and a receiver accepts either.

use base64::Engine;
use base64::engine::general_purpose::{GeneralPurpose, GeneralPurposeConfig, STANDARD};
use base64::engine::{DecodePaddingMode, general_purpose};
use hmac::{Hmac, KeyInit, Mac};
use sha2::Sha256;
use std::fmt;

/// What a secret's text starts with.
pub const PREFIX: &str = "whsec_";

/// The bytes of a secret made here.
pub const GENERATED_BYTES: usize = 32;

/// The fewest bytes a parsed secret may hold (192 bits, the specification's floor).
pub const MIN_BYTES: usize = 24;

/// The most bytes a parsed secret may hold (512 bits, the specification's ceiling).
pub const MAX_BYTES: usize = 64;

/// The signature scheme's version: HMAC-SHA256.
const VERSION: &str = "v1";

/// Standard base64 read with or without its padding (other libraries write it without).
const LENIENT: GeneralPurpose = GeneralPurpose::new(
    &base64::alphabet::STANDARD,
    GeneralPurposeConfig::new().with_decode_padding_mode(DecodePaddingMode::Indifferent),
);

/// Why a secret's text is refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SecretRefusal {
    #[error("secret: must start with whsec_")]
    Prefix,
    #[error("secret: must be whsec_ followed by standard base64")]
    NotBase64,
    #[error("secret: must hold {MIN_BYTES} to {MAX_BYTES} bytes, this one holds {0}")]
    Length(usize),
}

/// The operating system's random source failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("secret: no random source: {0}")]
pub struct NoRandomSource(getrandom::Error);

/// An endpoint's signing key. `Debug` shows nothing of it; `Display` writes `whsec_...`, for
/// the one answer that hands a new secret to its owner.
#[derive(Clone)]
pub struct WebhookSecret(Vec<u8>);

impl fmt::Debug for WebhookSecret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("WebhookSecret(..)")
    }
}

impl fmt::Display for WebhookSecret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{PREFIX}{}", STANDARD.encode(&self.0))
    }
}

impl WebhookSecret {
    /// A new secret of [`GENERATED_BYTES`] random bytes.
    pub fn generate() -> Result<WebhookSecret, NoRandomSource> {
        let mut key = vec![0u8; GENERATED_BYTES];
        getrandom::fill(&mut key).map_err(NoRandomSource)?;
        Ok(WebhookSecret(key))
    }

    /// `whsec_` and the standard base64 (padded or not) of [`MIN_BYTES`] to [`MAX_BYTES`]
    /// bytes.
    pub fn parse(text: &str) -> Result<WebhookSecret, SecretRefusal> {
        let encoded = text.strip_prefix(PREFIX).ok_or(SecretRefusal::Prefix)?;
        let key = LENIENT
            .decode(encoded)
            .map_err(|_| SecretRefusal::NotBase64)?;
        if !(MIN_BYTES..=MAX_BYTES).contains(&key.len()) {
            return Err(SecretRefusal::Length(key.len()));
        }
        Ok(WebhookSecret(key))
    }

    fn mac(&self, msg_id: &str, timestamp_secs: i64, body: &[u8]) -> Hmac<Sha256> {
        // The parsed or generated key is never empty, and HMAC takes a key of any length.
        let mut mac = <Hmac<Sha256> as KeyInit>::new_from_slice(&self.0)
            .expect("HMAC takes a key of any length");
        mac.update(msg_id.as_bytes());
        mac.update(b".");
        mac.update(timestamp_secs.to_string().as_bytes());
        mac.update(b".");
        mac.update(body);
        mac
    }

    /// `v1,<base64 of HMAC-SHA256 of "{msg_id}.{timestamp_secs}.{body}">`.
    pub fn sign(&self, msg_id: &str, timestamp_secs: i64, body: &[u8]) -> String {
        let tag = self
            .mac(msg_id, timestamp_secs, body)
            .finalize()
            .into_bytes();
        format!("{VERSION},{}", STANDARD.encode(tag))
    }
}

/// The `webhook-signature` header: each secret's signature, separated by a single space
/// (empty without secrets).
pub fn signature_header(
    secrets: &[&WebhookSecret],
    msg_id: &str,
    timestamp_secs: i64,
    body: &[u8],
) -> String {
    secrets
        .iter()
        .map(|s| s.sign(msg_id, timestamp_secs, body))
        .collect::<Vec<_>>()
        .join(" ")
}

/// Whether a `webhook-signature` header holds a `v1` signature of the message under one of
/// `secrets` (compared in constant time). Other versions are skipped. A receiver also checks
/// that the timestamp is recent (the specification suggests 5 minutes); that is not done here.
pub fn verify(
    header: &str,
    secrets: &[&WebhookSecret],
    msg_id: &str,
    timestamp_secs: i64,
    body: &[u8],
) -> bool {
    header
        .split(' ')
        .filter_map(|entry| entry.split_once(','))
        .filter(|(version, _)| *version == VERSION)
        .filter_map(|(_, sig)| general_purpose::STANDARD.decode(sig).ok())
        .any(|sig| {
            secrets.iter().any(|secret| {
                secret
                    .mac(msg_id, timestamp_secs, body)
                    .verify_slice(&sig)
                    .is_ok()
            })
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The reference implementation's test vector (standard-webhooks, libraries/python,
    /// `test_sign_function`).
    const VECTOR_SECRET: &str = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
    const VECTOR_ID: &str = "msg_p5jXN8AQM9LWM0D4loKWxJek";
    const VECTOR_TS: i64 = 1614265330;
    const VECTOR_BODY: &[u8] = br#"{"test": 2432232314}"#;
    const VECTOR_SIG: &str = "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=";

    fn secret_of(len: usize, byte: u8) -> String {
        format!("{PREFIX}{}", STANDARD.encode(vec![byte; len]))
    }

    #[test]
    fn the_published_test_vector_signs_and_verifies() {
        let secret = WebhookSecret::parse(VECTOR_SECRET).unwrap();
        assert_eq!(secret.sign(VECTOR_ID, VECTOR_TS, VECTOR_BODY), VECTOR_SIG);
        assert!(verify(
            VECTOR_SIG,
            &[&secret],
            VECTOR_ID,
            VECTOR_TS,
            VECTOR_BODY
        ));
        // The reference's "invalid signature": the last character changed.
        let forged = "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OA=";
        assert!(!verify(
            forged,
            &[&secret],
            VECTOR_ID,
            VECTOR_TS,
            VECTOR_BODY
        ));
        assert!(!verify(
            VECTOR_SIG,
            &[&secret],
            VECTOR_ID,
            VECTOR_TS + 1,
            VECTOR_BODY
        ));
        assert!(!verify(
            VECTOR_SIG,
            &[&secret],
            "msg_other",
            VECTOR_TS,
            VECTOR_BODY
        ));
        assert!(!verify(VECTOR_SIG, &[&secret], VECTOR_ID, VECTOR_TS, b"{}"));
    }

    #[test]
    fn a_header_among_other_versions_and_garbage_still_verifies() {
        let secret = WebhookSecret::parse(VECTOR_SECRET).unwrap();
        let header = format!(
            "v1,Ceo5qEr07ixe2NLpvHk3FH9bwy/WavXrAFQ/9tdO6mc= v2,{} v1a,abc nonsense {VECTOR_SIG}",
            &VECTOR_SIG[3..]
        );
        assert!(verify(
            &header,
            &[&secret],
            VECTOR_ID,
            VECTOR_TS,
            VECTOR_BODY
        ));
        assert!(!verify("", &[&secret], VECTOR_ID, VECTOR_TS, VECTOR_BODY));
        assert!(!verify(VECTOR_SIG, &[], VECTOR_ID, VECTOR_TS, VECTOR_BODY));
        // The same signature under another version is not a v1 signature.
        let v2 = format!("v2,{}", &VECTOR_SIG[3..]);
        assert!(!verify(&v2, &[&secret], VECTOR_ID, VECTOR_TS, VECTOR_BODY));
    }

    #[test]
    fn during_a_rotation_both_secrets_sign_and_either_verifies() {
        let old = WebhookSecret::parse(VECTOR_SECRET).unwrap();
        let new = WebhookSecret::generate().unwrap();
        let header = signature_header(&[&new, &old], VECTOR_ID, VECTOR_TS, VECTOR_BODY);
        let (first, second) = header.split_once(' ').unwrap();
        assert_eq!(first, new.sign(VECTOR_ID, VECTOR_TS, VECTOR_BODY));
        assert_eq!(second, VECTOR_SIG);
        assert_eq!(header.matches(' ').count(), 1);
        assert!(verify(&header, &[&old], VECTOR_ID, VECTOR_TS, VECTOR_BODY));
        assert!(verify(&header, &[&new], VECTOR_ID, VECTOR_TS, VECTOR_BODY));
        let stranger = WebhookSecret::generate().unwrap();
        assert!(!verify(
            &header,
            &[&stranger],
            VECTOR_ID,
            VECTOR_TS,
            VECTOR_BODY
        ));
        assert_eq!(
            signature_header(&[&old], VECTOR_ID, VECTOR_TS, VECTOR_BODY),
            VECTOR_SIG
        );
        assert_eq!(signature_header(&[], VECTOR_ID, VECTOR_TS, VECTOR_BODY), "");
    }

    #[test]
    fn a_generated_secret_is_32_bytes_parses_back_and_hides_in_debug() {
        let secret = WebhookSecret::generate().unwrap();
        let text = secret.to_string();
        assert!(text.starts_with(PREFIX));
        assert_eq!(
            STANDARD.decode(&text[PREFIX.len()..]).unwrap().len(),
            GENERATED_BYTES
        );
        let back = WebhookSecret::parse(&text).unwrap();
        assert_eq!(back.to_string(), text);
        assert_eq!(format!("{secret:?}"), "WebhookSecret(..)");
        assert!(!format!("{secret:?}").contains(&text[PREFIX.len()..]));
        assert_ne!(WebhookSecret::generate().unwrap().to_string(), text);
    }

    #[test]
    fn a_secret_holds_24_to_64_bytes() {
        assert_eq!(
            WebhookSecret::parse(&secret_of(23, 7)).unwrap_err(),
            SecretRefusal::Length(23)
        );
        assert!(WebhookSecret::parse(&secret_of(24, 7)).is_ok());
        assert!(WebhookSecret::parse(&secret_of(64, 7)).is_ok());
        assert_eq!(
            WebhookSecret::parse(&secret_of(65, 7)).unwrap_err(),
            SecretRefusal::Length(65)
        );
        assert_eq!(
            WebhookSecret::parse(PREFIX).unwrap_err(),
            SecretRefusal::Length(0)
        );
    }

    #[test]
    fn other_shapes_are_refused() {
        let good = secret_of(32, 1);
        let encoded = &good[PREFIX.len()..];
        assert_eq!(
            WebhookSecret::parse(encoded).unwrap_err(),
            SecretRefusal::Prefix
        );
        assert_eq!(
            WebhookSecret::parse(&format!("WHSEC_{encoded}")).unwrap_err(),
            SecretRefusal::Prefix
        );
        assert_eq!(
            WebhookSecret::parse(&format!(" {good}")).unwrap_err(),
            SecretRefusal::Prefix
        );
        // URL-safe base64 is not the standard alphabet.
        let url_safe = format!("{PREFIX}{}", "_-".repeat(16));
        assert_eq!(
            WebhookSecret::parse(&url_safe).unwrap_err(),
            SecretRefusal::NotBase64
        );
        assert_eq!(
            WebhookSecret::parse(&format!("{good} ")).unwrap_err(),
            SecretRefusal::NotBase64
        );
        assert_eq!(
            WebhookSecret::parse("whsec_not base64!").unwrap_err(),
            SecretRefusal::NotBase64
        );
        // Padding may be left off, as other libraries write it.
        let unpadded = good.trim_end_matches('=');
        assert_ne!(unpadded, good);
        assert_eq!(WebhookSecret::parse(unpadded).unwrap().to_string(), good);
    }

    #[test]
    fn refusals_say_the_rule() {
        assert_eq!(
            SecretRefusal::Length(3).to_string(),
            "secret: must hold 24 to 64 bytes, this one holds 3"
        );
        assert_eq!(
            SecretRefusal::Prefix.to_string(),
            "secret: must start with whsec_"
        );
    }
}
