//! What a webhook endpoint's URL must be: absolute, `https` (or `http` when the server allows
//! it), naming a host, without a user name, password or fragment, at most
//! [`MAX_CHARS`] characters. Where its host may resolve is judged at connect time
//! ([`crate::address`]).

use std::fmt;
use std::net::IpAddr;
use url::{Host, Url};

/// The server's flag that lets endpoints use plain `http` (local development and tests).
pub const ALLOW_HTTP_FLAG: &str = "--allow-http-webhooks";

/// The longest URL accepted, in characters.
pub const MAX_CHARS: usize = 2000;

/// Why a URL is not a webhook endpoint.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum UrlRefusal {
    #[error("url: must be at most {MAX_CHARS} characters")]
    TooLong,
    #[error("url: must be an absolute URL, such as https://example.com/webhooks")]
    NotAbsolute,
    #[error("url: is not a valid URL")]
    Malformed,
    #[error(
        "url: must use https (http is allowed only when the server runs with {ALLOW_HTTP_FLAG})"
    )]
    NotHttps,
    #[error("url: must use https or http")]
    NotHttpOrHttps,
    #[error("url: must name a host")]
    NoHost,
    #[error("url: must not carry a user name or password")]
    Credentials,
    #[error("url: must not have a fragment (#...)")]
    Fragment,
}

/// A URL webhooks may be sent to, as [`EndpointUrl::parse`] accepts it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EndpointUrl(Url);

impl EndpointUrl {
    /// `text` as an endpoint; `allow_http` when the server runs with [`ALLOW_HTTP_FLAG`].
    pub fn parse(text: &str, allow_http: bool) -> Result<EndpointUrl, UrlRefusal> {
        if text.chars().count() > MAX_CHARS {
            return Err(UrlRefusal::TooLong);
        }
        let url = Url::parse(text).map_err(|e| match e {
            url::ParseError::RelativeUrlWithoutBase => UrlRefusal::NotAbsolute,
            url::ParseError::EmptyHost => UrlRefusal::NoHost,
            _ => UrlRefusal::Malformed,
        })?;
        match url.scheme() {
            "https" => {}
            "http" if allow_http => {}
            "http" => return Err(UrlRefusal::NotHttps),
            _ if allow_http => return Err(UrlRefusal::NotHttpOrHttps),
            _ => return Err(UrlRefusal::NotHttps),
        }
        if url.host().is_none() {
            return Err(UrlRefusal::NoHost);
        }
        if !url.username().is_empty() || url.password().is_some() {
            return Err(UrlRefusal::Credentials);
        }
        if url.fragment().is_some() {
            return Err(UrlRefusal::Fragment);
        }
        Ok(EndpointUrl(url))
    }

    /// The URL as parsed (normalized: a lower-case host, a `/` path at least).
    pub fn as_str(&self) -> &str {
        self.0.as_str()
    }

    /// The parsed URL.
    pub fn url(&self) -> &Url {
        &self.0
    }

    /// The host's address when the URL names one instead of a domain (no lookup then, so the
    /// sender judges it itself).
    pub fn ip(&self) -> Option<IpAddr> {
        match self.0.host()? {
            Host::Ipv4(ip) => Some(IpAddr::V4(ip)),
            Host::Ipv6(ip) => Some(IpAddr::V6(ip)),
            Host::Domain(_) => None,
        }
    }
}

impl fmt::Display for EndpointUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn refusal(text: &str, allow_http: bool) -> UrlRefusal {
        EndpointUrl::parse(text, allow_http).unwrap_err()
    }

    #[test]
    fn an_https_url_is_accepted_as_parsed() {
        let url = EndpointUrl::parse("https://Hooks.Example.com/in?x=1", false).unwrap();
        assert_eq!(url.as_str(), "https://hooks.example.com/in?x=1");
        assert_eq!(url.to_string(), url.as_str());
        assert_eq!(url.ip(), None);
        let port = EndpointUrl::parse("https://example.com:8443", false).unwrap();
        assert_eq!(port.as_str(), "https://example.com:8443/");
    }

    #[test]
    fn http_only_with_the_flag() {
        assert_eq!(refusal("http://example.com/", false), UrlRefusal::NotHttps);
        assert!(EndpointUrl::parse("http://example.com/", true).is_ok());
        assert_eq!(
            refusal("http://example.com/", false).to_string(),
            "url: must use https (http is allowed only when the server runs with \
             --allow-http-webhooks)"
        );
    }

    #[test]
    fn other_schemes_are_refused() {
        assert_eq!(refusal("ftp://example.com/", false), UrlRefusal::NotHttps);
        assert_eq!(
            refusal("ftp://example.com/", true),
            UrlRefusal::NotHttpOrHttps
        );
        assert_eq!(refusal("file:///etc/passwd", false), UrlRefusal::NotHttps);
        assert_eq!(
            refusal("javascript:alert(1)", true),
            UrlRefusal::NotHttpOrHttps
        );
        assert_eq!(refusal("mailto:a@example.com", false), UrlRefusal::NotHttps);
    }

    #[test]
    fn a_url_is_absolute_and_names_a_host() {
        assert_eq!(refusal("/webhooks", false), UrlRefusal::NotAbsolute);
        assert_eq!(
            refusal("example.com/webhooks", false),
            UrlRefusal::NotAbsolute
        );
        assert_eq!(refusal("", false), UrlRefusal::NotAbsolute);
        assert_eq!(refusal("https://", false), UrlRefusal::NoHost);
        assert_eq!(
            refusal("https://exa mple.com/", false),
            UrlRefusal::Malformed
        );
        assert_eq!(refusal("https://[::1/", false), UrlRefusal::Malformed);
    }

    #[test]
    fn no_credentials_and_no_fragment() {
        assert_eq!(
            refusal("https://user@example.com/", false),
            UrlRefusal::Credentials
        );
        assert_eq!(
            refusal("https://user:pw@example.com/", false),
            UrlRefusal::Credentials
        );
        assert_eq!(
            refusal("https://:pw@example.com/", false),
            UrlRefusal::Credentials
        );
        assert_eq!(
            refusal("https://example.com/#top", false),
            UrlRefusal::Fragment
        );
        assert_eq!(
            refusal("https://example.com/#", false),
            UrlRefusal::Fragment
        );
    }

    #[test]
    fn at_most_2000_characters() {
        let base = "https://example.com/";
        let at_limit = format!("{base}{}", "a".repeat(MAX_CHARS - base.len()));
        assert_eq!(at_limit.chars().count(), MAX_CHARS);
        assert!(EndpointUrl::parse(&at_limit, false).is_ok());
        assert_eq!(refusal(&format!("{at_limit}a"), false), UrlRefusal::TooLong);
        // Characters, not bytes.
        let wide = format!("{base}{}", "é".repeat(MAX_CHARS - base.len()));
        assert!(EndpointUrl::parse(&wide, false).is_ok());
        assert_eq!(refusal(&format!("{wide}é"), false), UrlRefusal::TooLong);
    }

    #[test]
    fn an_address_host_is_named() {
        let v4 = EndpointUrl::parse("https://127.0.0.1:8080/x", false).unwrap();
        assert_eq!(v4.ip(), Some("127.0.0.1".parse().unwrap()));
        let v6 = EndpointUrl::parse("https://[::1]/x", false).unwrap();
        assert_eq!(v6.ip(), Some("::1".parse().unwrap()));
        // Other spellings of an IPv4 address read as the address.
        let hex = EndpointUrl::parse("https://0x7f.1/", false).unwrap();
        assert_eq!(hex.ip(), Some("127.0.0.1".parse().unwrap()));
        let decimal = EndpointUrl::parse("https://2130706433/", false).unwrap();
        assert_eq!(decimal.ip(), Some("127.0.0.1".parse().unwrap()));
    }
}
