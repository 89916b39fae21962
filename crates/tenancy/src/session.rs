//! Dashboard sessions. A person signs in with a personal key; the service answers with a
//! session token in a cookie and keeps only the token's SHA-256, tied to the key. The key
//! itself never reaches the browser's storage, and revoking the key ends its sessions at
//! their next request.
//!
//! Each form carries a CSRF token derived from the session token (HMAC-SHA256 keyed with the
//! token): a page of the service can print it, another site can neither read the cookie nor
//! compute it, and the service needs no second secret to check it.

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use hmac::{Hmac, KeyInit, Mac};
use sha2::{Digest, Sha256};
use std::fmt;

/// The cookie that holds the session token.
pub const COOKIE: &str = "fleetdesk_session";

/// How long a session lasts from sign-in: a working day. Signing in again makes a new one.
pub const SESSION_HOURS: i64 = 12;

/// The live sessions a key keeps: signing in again past them ends the oldest, so a key cannot
/// pile sessions up.
pub const SESSIONS_KEPT: i64 = 20;

/// 32 random bytes in unpadded base64url.
const TOKEN_LEN: usize = 43;

/// What the CSRF token is the HMAC of, so it can never equal a token made for another use.
const CSRF_CONTEXT: &[u8] = b"fleetdesk dashboard csrf v1";

/// A session token as the browser holds it. `Debug` shows nothing of it.
#[derive(Clone, PartialEq, Eq)]
pub struct SessionToken(String);

impl fmt::Debug for SessionToken {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("SessionToken(..)")
    }
}

impl SessionToken {
    pub fn generate() -> SessionToken {
        let mut raw = [0u8; 32];
        getrandom::fill(&mut raw).expect("the operating system's random source failed");
        SessionToken(URL_SAFE_NO_PAD.encode(raw))
    }

    /// A cookie's value when it has the shape of a token (anything else is no session).
    pub fn parse(value: &str) -> Option<SessionToken> {
        (value.len() == TOKEN_LEN
            && value
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_'))
        .then(|| SessionToken(value.to_owned()))
    }

    /// The cookie's value.
    pub fn expose(&self) -> &str {
        &self.0
    }

    /// What the store keeps and looks the session up by.
    pub fn hash(&self) -> [u8; 32] {
        Sha256::digest(self.0.as_bytes()).into()
    }

    fn csrf_mac(&self) -> Hmac<Sha256> {
        let mut mac = <Hmac<Sha256> as KeyInit>::new_from_slice(self.0.as_bytes())
            .expect("HMAC takes a key of any length");
        mac.update(CSRF_CONTEXT);
        mac
    }

    /// The CSRF token the session's forms carry.
    pub fn csrf(&self) -> String {
        URL_SAFE_NO_PAD.encode(self.csrf_mac().finalize().into_bytes())
    }

    /// Whether a form's CSRF token is this session's (compared in constant time).
    pub fn accepts_csrf(&self, presented: &str) -> bool {
        let Ok(bytes) = URL_SAFE_NO_PAD.decode(presented) else {
            return false;
        };
        self.csrf_mac().verify_slice(&bytes).is_ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_generated_token_parses_back_and_hides_in_debug() {
        let t = SessionToken::generate();
        assert_eq!(t.expose().len(), TOKEN_LEN);
        assert_eq!(SessionToken::parse(t.expose()), Some(t.clone()));
        assert_eq!(format!("{t:?}"), "SessionToken(..)");
        assert_ne!(SessionToken::generate(), t);
    }

    #[test]
    fn only_token_shaped_values_parse() {
        let t = SessionToken::generate();
        assert!(SessionToken::parse(&t.expose()[1..]).is_none());
        assert!(SessionToken::parse(&format!("{}=", &t.expose()[1..])).is_none());
        assert!(SessionToken::parse("").is_none());
    }

    #[test]
    fn the_csrf_token_is_the_sessions_own() {
        let (a, b) = (SessionToken::generate(), SessionToken::generate());
        assert!(a.accepts_csrf(&a.csrf()));
        assert!(!a.accepts_csrf(&b.csrf()));
        assert!(!a.accepts_csrf(""));
        assert!(!a.accepts_csrf("not base64!"));
        assert_ne!(a.csrf(), a.expose());
        assert_ne!(URL_SAFE_NO_PAD.encode(a.hash()), a.csrf());
    }
}
