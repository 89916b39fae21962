//! Key format, generation and hashing: `fda_<8>_<43>` for agents, `fdp_<8>_<43>` for people.
//! The 8 characters are a random lookup id, the 43 are 32 random bytes in unpadded base64url.
//! Only the lookup id and a SHA-256 of the whole key are stored.

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use sha2::{Digest, Sha256};
use std::fmt;

fleetdesk_kernel::text_enum! {
    /// Who a key belongs to. Its text is the `kind` of list_keys and revoke_key: `agent` or
    /// `user`.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
    pub enum KeyKind {
        Agent => "agent",
        Personal => "user",
    }
}

impl KeyKind {
    pub fn prefix(self) -> &'static str {
        match self {
            KeyKind::Agent => "fda",
            KeyKind::Personal => "fdp",
        }
    }
}

/// Whom `fleetdesk admin issue-key` issues a new key to, by the names of the tenant file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KeyHolder {
    /// A member of an organization (not one who left), by e-mail.
    Member { organization: String, email: String },
    /// An agent of a workspace (not archived), by name.
    Agent {
        organization: String,
        workspace: String,
        agent: String,
    },
    /// A platform admin's key bound to no organization.
    PlatformAdmin { email: String },
}

impl KeyHolder {
    /// The names as the tenant file stores them ([`crate::tenant_file::TenantFile::normalized`]):
    /// trimmed, an e-mail also lower-cased.
    pub fn normalized(&self) -> KeyHolder {
        let name = |s: &str| s.trim().to_owned();
        let email = |s: &str| s.trim().to_lowercase();
        match self {
            KeyHolder::Member {
                organization,
                email: e,
            } => KeyHolder::Member {
                organization: name(organization),
                email: email(e),
            },
            KeyHolder::Agent {
                organization,
                workspace,
                agent,
            } => KeyHolder::Agent {
                organization: name(organization),
                workspace: name(workspace),
                agent: name(agent),
            },
            KeyHolder::PlatformAdmin { email: e } => KeyHolder::PlatformAdmin { email: email(e) },
        }
    }

    /// The kind of key the holder is issued.
    pub fn kind(&self) -> KeyKind {
        match self {
            KeyHolder::Agent { .. } => KeyKind::Agent,
            KeyHolder::Member { .. } | KeyHolder::PlatformAdmin { .. } => KeyKind::Personal,
        }
    }
}

const LOOKUP_LEN: usize = 8;
const SECRET_LEN: usize = 43;
const ALPHANUMERIC: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";

/// A key that was just issued. `full` is shown once and never stored.
pub struct IssuedKey {
    pub kind: KeyKind,
    pub full: String,
    pub lookup: String,
    pub hash: [u8; 32],
}

impl fmt::Debug for IssuedKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("IssuedKey")
            .field("kind", &self.kind)
            .field("lookup", &self.lookup)
            .finish_non_exhaustive()
    }
}

impl IssuedKey {
    pub fn generate(kind: KeyKind) -> IssuedKey {
        let mut raw = [0u8; LOOKUP_LEN + 32];
        getrandom::fill(&mut raw).expect("the operating system's random source failed");
        // 62 symbols: reject bytes above the largest multiple of 62 to avoid bias.
        let mut lookup = String::with_capacity(LOOKUP_LEN);
        let mut pool = raw[..LOOKUP_LEN].to_vec();
        while lookup.len() < LOOKUP_LEN {
            for &b in &pool {
                if lookup.len() < LOOKUP_LEN && b < 248 {
                    lookup.push(ALPHANUMERIC[(b % 62) as usize] as char);
                }
            }
            if lookup.len() < LOOKUP_LEN {
                getrandom::fill(&mut pool).expect("the operating system's random source failed");
            }
        }
        let secret = URL_SAFE_NO_PAD.encode(&raw[LOOKUP_LEN..]);
        let full = format!("{}_{}_{}", kind.prefix(), lookup, secret);
        let hash = hash_key(&full);
        IssuedKey {
            kind,
            full,
            lookup,
            hash,
        }
    }
}

/// A presented key that has the right shape. Its hash is what the store compares.
#[derive(Clone, PartialEq, Eq)]
pub struct ParsedKey {
    pub kind: KeyKind,
    pub lookup: String,
    pub hash: [u8; 32],
}

impl fmt::Debug for ParsedKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ParsedKey")
            .field("kind", &self.kind)
            .field("lookup", &self.lookup)
            .finish()
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("the key is malformed")]
pub struct KeyParseError;

impl ParsedKey {
    pub fn parse(presented: &str) -> Result<ParsedKey, KeyParseError> {
        let mut parts = presented.splitn(3, '_');
        let (prefix, lookup, secret) = match (parts.next(), parts.next(), parts.next()) {
            (Some(p), Some(l), Some(s)) => (p, l, s),
            _ => return Err(KeyParseError),
        };
        let kind = match prefix {
            "fda" => KeyKind::Agent,
            "fdp" => KeyKind::Personal,
            _ => return Err(KeyParseError),
        };
        if lookup.len() != LOOKUP_LEN || !lookup.bytes().all(|b| b.is_ascii_alphanumeric()) {
            return Err(KeyParseError);
        }
        if secret.len() != SECRET_LEN
            || !secret
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
        {
            return Err(KeyParseError);
        }
        Ok(ParsedKey {
            kind,
            lookup: lookup.to_owned(),
            hash: hash_key(presented),
        })
    }
}

pub fn hash_key(full: &str) -> [u8; 32] {
    Sha256::digest(full.as_bytes()).into()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generated_keys_have_the_documented_shape_and_parse_back() {
        for kind in [KeyKind::Agent, KeyKind::Personal] {
            let k = IssuedKey::generate(kind);
            assert_eq!(k.full.len(), 3 + 1 + 8 + 1 + 43);
            assert!(
                k.full
                    .starts_with(&format!("{}_{}_", kind.prefix(), k.lookup))
            );
            let p = ParsedKey::parse(&k.full).unwrap();
            assert_eq!(p.kind, kind);
            assert_eq!(p.lookup, k.lookup);
            assert_eq!(p.hash, k.hash);
        }
    }

    #[test]
    fn keys_are_distinct() {
        let a = IssuedKey::generate(KeyKind::Agent);
        let b = IssuedKey::generate(KeyKind::Agent);
        assert_ne!(a.full, b.full);
        assert_ne!(a.lookup, b.lookup);
    }

    #[test]
    fn malformed_keys_are_refused() {
        let good = IssuedKey::generate(KeyKind::Agent).full;
        assert!(ParsedKey::parse(&good[..good.len() - 1]).is_err());
        assert!(ParsedKey::parse(&good.replacen("fda", "fdx", 1)).is_err());
        assert!(ParsedKey::parse("fda_short_x").is_err());
        assert!(ParsedKey::parse("").is_err());
        let bad_lookup = format!("fda_abc!efgh_{}", &good[13..]);
        assert!(ParsedKey::parse(&bad_lookup).is_err());
    }

    #[test]
    fn a_key_holder_is_named_as_the_tenant_file_stores_names() {
        let member = KeyHolder::Member {
            organization: " Acme ".into(),
            email: " Ann@Example.COM ".into(),
        };
        assert_eq!(
            member.normalized(),
            KeyHolder::Member {
                organization: "Acme".into(),
                email: "ann@example.com".into(),
            }
        );
        assert_eq!(member.kind(), KeyKind::Personal);
        let agent = KeyHolder::Agent {
            organization: "Acme ".into(),
            workspace: " Main".into(),
            agent: " Writer Bot ".into(),
        };
        assert_eq!(
            agent.normalized(),
            KeyHolder::Agent {
                organization: "Acme".into(),
                workspace: "Main".into(),
                agent: "Writer Bot".into(),
            },
            "a name keeps its case"
        );
        assert_eq!(agent.kind(), KeyKind::Agent);
        let admin = KeyHolder::PlatformAdmin {
            email: "ROOT@x.io".into(),
        };
        assert_eq!(
            admin.normalized(),
            KeyHolder::PlatformAdmin {
                email: "root@x.io".into()
            }
        );
        assert_eq!(admin.kind(), KeyKind::Personal);
    }

    #[test]
    fn debug_never_prints_the_secret() {
        let k = IssuedKey::generate(KeyKind::Personal);
        assert!(!format!("{k:?}").contains(&k.full));
        let p = ParsedKey::parse(&k.full).unwrap();
        assert!(!format!("{p:?}").contains(&k.full[13..]));
    }
}
