//! Signed links to stored files, served by the service itself on its own domain.
//!
//! A link names the file, the variant (`file` or `thumb`) and an expiry, signed with HMAC-SHA256
//! under a key every instance shares. Expiries are rounded up to the hour, so a file keeps the
//! same link for an hour and caches can hold it; each link still lives at least
//! [`Links::LIFETIME_SECONDS`]. An expiry further ahead than any link this service makes is
//! refused, so a signature cannot be stretched into a link that never expires.

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use hmac::{Hmac, KeyInit, Mac};
use jiff::Timestamp;
use sha2::Sha256;
use std::sync::Arc;
use uuid::Uuid;

/// Where a request says it was addressed, `scheme://host`: as a proxy in front forwarded it
/// (`forwarded`, what the `Forwarded` or `X-Forwarded-Host`/`-Proto` headers say) only when
/// the connection comes from one of the `trusted` proxies the operator named; otherwise as the
/// connection itself carries it (`direct`: its own scheme and its `Host`). Anyone can send
/// forwarding headers, so a page's Origin check and the links in answers never follow them
/// from an untrusted peer.
pub fn public_origin(
    peer: Option<std::net::IpAddr>,
    trusted: &[std::net::IpAddr],
    forwarded: (&str, &str),
    direct: (&str, &str),
) -> String {
    let from_proxy = peer.is_some_and(|ip| trusted.contains(&ip.to_canonical()));
    let (scheme, host) = if from_proxy { forwarded } else { direct };
    format!("{scheme}://{host}")
}

#[derive(Clone)]
pub struct Links {
    key: Arc<[u8]>,
}

impl std::fmt::Debug for Links {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Links { key: <redacted> }")
    }
}

/// What a link points at.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Variant {
    File,
    Thumb,
}

impl Variant {
    pub fn as_str(self) -> &'static str {
        match self {
            Variant::File => "file",
            Variant::Thumb => "thumb",
        }
    }

    pub fn parse(s: &str) -> Option<Variant> {
        match s {
            "file" => Some(Variant::File),
            "thumb" => Some(Variant::Thumb),
            _ => None,
        }
    }
}

impl Links {
    /// How long a media library link stays valid, at least (`links_expire_in_seconds`).
    pub const LIFETIME_SECONDS: i64 = 86_400;

    pub fn new(key: &[u8]) -> Links {
        Links {
            key: Arc::from(key),
        }
    }

    /// The furthest ahead a link's expiry can be: its lifetime plus the rounding to the hour.
    pub const MAX_AHEAD_SECONDS: i64 = Self::LIFETIME_SECONDS + 3600;

    /// The expiry of links made at `now`: at least a day ahead, rounded up to the hour.
    pub fn expiry(now: Timestamp) -> i64 {
        let at = now.as_second() + Self::LIFETIME_SECONDS;
        (at + 3599).div_euclid(3600) * 3600
    }

    fn signature(&self, id: Uuid, variant: Variant, expires: i64) -> Vec<u8> {
        let mut mac = <Hmac<Sha256> as KeyInit>::new_from_slice(&self.key)
            .expect("HMAC takes keys of any length");
        mac.update(format!("{id}/{}/{expires}", variant.as_str()).as_bytes());
        mac.finalize().into_bytes().to_vec()
    }

    /// `{base}/files/{id}/{variant}?e=..&s=..`
    pub fn url(&self, base: &str, id: Uuid, variant: Variant, expires: i64) -> String {
        let sig = URL_SAFE_NO_PAD.encode(self.signature(id, variant, expires));
        format!(
            "{}/files/{id}/{}?e={expires}&s={sig}",
            base.trim_end_matches('/'),
            variant.as_str()
        )
    }

    /// True when the signature is this service's, the link has not expired, and its expiry is
    /// no further ahead than a link made now could have.
    pub fn verify(
        &self,
        id: Uuid,
        variant: Variant,
        expires: i64,
        sig: &str,
        now: Timestamp,
    ) -> bool {
        let now = now.as_second();
        if expires <= now || expires - now > Self::MAX_AHEAD_SECONDS {
            return false;
        }
        let Ok(given) = URL_SAFE_NO_PAD.decode(sig) else {
            return false;
        };
        let mut mac = <Hmac<Sha256> as KeyInit>::new_from_slice(&self.key)
            .expect("HMAC takes keys of any length");
        mac.update(format!("{id}/{}/{expires}", variant.as_str()).as_bytes());
        mac.verify_slice(&given).is_ok()
    }
}

/// What a persona image link points at. Persona links are signed under their own prefix
/// (`persona/`), so a persona link can never be replayed as a media link or the other way
/// round, and live [`Links::PERSONA_LIFETIME_SECONDS`] instead of a day.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PersonaVariant {
    File,
    Thumb,
}

impl PersonaVariant {
    pub fn as_str(self) -> &'static str {
        match self {
            PersonaVariant::File => "file",
            PersonaVariant::Thumb => "thumb",
        }
    }

    pub fn parse(s: &str) -> Option<PersonaVariant> {
        match s {
            "file" => Some(PersonaVariant::File),
            "thumb" => Some(PersonaVariant::Thumb),
            _ => None,
        }
    }
}

impl Links {
    /// How long a persona image link stays valid (`images_expire_in_seconds`).
    pub const PERSONA_LIFETIME_SECONDS: i64 = 900;

    /// The furthest ahead a persona link's expiry can be: exactly its lifetime (persona links
    /// are not rounded, so a link lives what `images_expire_in_seconds` says).
    pub const PERSONA_MAX_AHEAD_SECONDS: i64 = Self::PERSONA_LIFETIME_SECONDS;

    /// The expiry of persona links made at `now`: exactly 15 minutes ahead.
    pub fn persona_expiry(now: Timestamp) -> i64 {
        now.as_second() + Self::PERSONA_LIFETIME_SECONDS
    }

    fn persona_signature(&self, id: Uuid, variant: PersonaVariant, expires: i64) -> Hmac<Sha256> {
        let mut mac = <Hmac<Sha256> as KeyInit>::new_from_slice(&self.key)
            .expect("HMAC takes keys of any length");
        mac.update(format!("persona/{id}/{}/{expires}", variant.as_str()).as_bytes());
        mac
    }

    /// `{base}/files/persona/{id}/{variant}?e=..&s=..`
    pub fn persona_url(
        &self,
        base: &str,
        id: Uuid,
        variant: PersonaVariant,
        expires: i64,
    ) -> String {
        let sig = URL_SAFE_NO_PAD.encode(
            self.persona_signature(id, variant, expires)
                .finalize()
                .into_bytes(),
        );
        format!(
            "{}/files/persona/{id}/{}?e={expires}&s={sig}",
            base.trim_end_matches('/'),
            variant.as_str()
        )
    }

    /// True when the persona link's signature is this service's, it has not expired, and its
    /// expiry is no further ahead than a persona link made now could have.
    pub fn verify_persona(
        &self,
        id: Uuid,
        variant: PersonaVariant,
        expires: i64,
        sig: &str,
        now: Timestamp,
    ) -> bool {
        let now = now.as_second();
        if expires <= now || expires - now > Self::PERSONA_MAX_AHEAD_SECONDS {
            return false;
        }
        let Ok(given) = URL_SAFE_NO_PAD.decode(sig) else {
            return false;
        };
        self.persona_signature(id, variant, expires)
            .verify_slice(&given)
            .is_ok()
    }
}

/// Signs the persona image links of one answer, all with one expiry.
pub struct PersonaSigner<'a> {
    links: &'a Links,
    base: String,
    expires: i64,
}

impl<'a> PersonaSigner<'a> {
    /// Links on `base` (the service's address for this request), valid from `now`.
    pub fn new(links: &'a Links, base: String, now: Timestamp) -> Self {
        PersonaSigner {
            links,
            base,
            expires: Links::persona_expiry(now),
        }
    }

    pub fn url(&self, id: Uuid, variant: PersonaVariant) -> String {
        self.links
            .persona_url(&self.base, id, variant, self.expires)
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn forwarded_origins_are_taken_only_from_trusted_proxies() {
        use super::public_origin;
        let proxy: std::net::IpAddr = "10.0.0.5".parse().unwrap();
        let stranger: std::net::IpAddr = "203.0.113.9".parse().unwrap();
        let forwarded = ("https", "fleet.example.com");
        let direct = ("http", "10.0.0.2:8080");
        assert_eq!(
            public_origin(Some(proxy), &[proxy], forwarded, direct),
            "https://fleet.example.com"
        );
        assert_eq!(
            public_origin(Some(stranger), &[proxy], forwarded, direct),
            "http://10.0.0.2:8080"
        );
        assert_eq!(
            public_origin(None, &[proxy], forwarded, direct),
            "http://10.0.0.2:8080"
        );
        assert_eq!(
            public_origin(Some(proxy), &[], forwarded, direct),
            "http://10.0.0.2:8080"
        );
        // An IPv4 peer seen on an IPv6 socket is the same peer.
        let mapped: std::net::IpAddr = "::ffff:10.0.0.5".parse().unwrap();
        assert_eq!(
            public_origin(Some(mapped), &[proxy], forwarded, direct),
            "https://fleet.example.com"
        );
    }

    use super::*;

    fn now() -> Timestamp {
        "2026-11-21T10:15:00Z".parse().unwrap()
    }

    #[test]
    fn links_live_at_least_a_day_rounded_to_the_hour() {
        let e = Links::expiry(now());
        assert_eq!(e % 3600, 0);
        assert!(e - now().as_second() >= Links::LIFETIME_SECONDS);
        assert!(e - now().as_second() < Links::LIFETIME_SECONDS + 3600);
    }

    #[test]
    fn a_link_verifies_until_it_expires_and_only_for_its_file() {
        let links = Links::new(b"k");
        let id = Uuid::from_u128(7);
        let e = Links::expiry(now());
        let url = links.url("http://h/", id, Variant::File, e);
        let sig = url.rsplit("s=").next().unwrap();
        assert!(url.starts_with(&format!("http://h/files/{id}/file?e={e}&s=")));
        assert!(links.verify(id, Variant::File, e, sig, now()));
        assert!(!links.verify(id, Variant::Thumb, e, sig, now()));
        assert!(!links.verify(Uuid::from_u128(8), Variant::File, e, sig, now()));
        assert!(!links.verify(id, Variant::File, e + 3600, sig, now()));
        let later = Timestamp::from_second(e).unwrap();
        assert!(!links.verify(id, Variant::File, e, sig, later));
        assert!(!Links::new(b"other").verify(id, Variant::File, e, sig, now()));
    }

    #[test]
    fn an_expiry_beyond_the_lifetime_is_refused_even_when_signed() {
        let links = Links::new(b"k");
        let id = Uuid::from_u128(7);
        let sig_for = |e: i64| {
            let url = links.url("http://h", id, Variant::File, e);
            url.rsplit("s=").next().unwrap().to_owned()
        };
        let at = now().as_second();
        let furthest = at + Links::MAX_AHEAD_SECONDS;
        assert!(Links::expiry(now()) <= furthest);
        assert!(links.verify(id, Variant::File, furthest, &sig_for(furthest), now()));
        let past = furthest + 1;
        assert!(!links.verify(id, Variant::File, past, &sig_for(past), now()));
        let year_2100 = 4_102_444_800;
        assert!(!links.verify(id, Variant::File, year_2100, &sig_for(year_2100), now()));
    }

    #[test]
    fn persona_links_live_fifteen_minutes_and_are_never_media_links() {
        let links = Links::new(b"k");
        let id = Uuid::from_u128(7);
        let e = Links::persona_expiry(now());
        assert_eq!(e - now().as_second(), 900);
        assert_eq!(Links::PERSONA_MAX_AHEAD_SECONDS, 900);
        // A second off the minute is not rounded up either.
        let odd: Timestamp = "2026-11-21T10:15:01Z".parse().unwrap();
        assert_eq!(Links::persona_expiry(odd) - odd.as_second(), 900);
        let url = links.persona_url("http://h/", id, PersonaVariant::Thumb, e);
        assert!(url.starts_with(&format!("http://h/files/persona/{id}/thumb?e={e}&s=")));
        let sig = url.rsplit("s=").next().unwrap();
        assert!(links.verify_persona(id, PersonaVariant::Thumb, e, sig, now()));
        assert!(!links.verify_persona(id, PersonaVariant::File, e, sig, now()));
        assert!(!links.verify_persona(Uuid::from_u128(8), PersonaVariant::Thumb, e, sig, now()));
        assert!(!links.verify(id, Variant::Thumb, e, sig, now()));
        let later = Timestamp::from_second(e).unwrap();
        assert!(!links.verify_persona(id, PersonaVariant::Thumb, e, sig, later));
        // A media link's signature does not open the persona file of the same id.
        let media = links.url("http://h", id, Variant::File, e);
        let media_sig = media.rsplit("s=").next().unwrap();
        assert!(!links.verify_persona(id, PersonaVariant::File, e, media_sig, now()));
        // Signed, but further ahead than a persona link can be.
        // The furthest a link made now reaches verifies; a second past it does not.
        assert!(
            links.verify_persona(
                id,
                PersonaVariant::Thumb,
                now().as_second() + 900,
                links
                    .persona_url(
                        "http://h",
                        id,
                        PersonaVariant::Thumb,
                        now().as_second() + 900
                    )
                    .rsplit("s=")
                    .next()
                    .unwrap(),
                now()
            )
        );
        let far = now().as_second() + 901;
        let far_url = links.persona_url("http://h", id, PersonaVariant::File, far);
        let far_sig = far_url.rsplit("s=").next().unwrap();
        assert!(!links.verify_persona(id, PersonaVariant::File, far, far_sig, now()));
    }
}
