//! The addresses a webhook may never reach: whatever is not the public internet (this host,
//! private and shared networks, link-local and the cloud metadata service, multicast, reserved
//! and documentation ranges). An agency registers the URL, so without this check it could
//! make the service call its own network (SSRF). The sender judges every address a host
//! resolves to, when it connects.

use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// Why an address may not be a webhook's target.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ForbiddenKind {
    /// 127.0.0.0/8, ::1.
    Loopback,
    /// 0.0.0.0, ::.
    Unspecified,
    /// 0.0.0.0/8: "this network".
    ThisNetwork,
    /// 10.0.0.0/8, 172.16.0.0/12, 192.168.0.0/16.
    Private,
    /// 100.64.0.0/10: carrier-grade NAT.
    SharedAddressSpace,
    /// 169.254.0.0/16, fe80::/10.
    LinkLocal,
    /// 169.254.169.254 and fd00:ec2::254: the cloud instance metadata service.
    CloudMetadata,
    /// fc00::/7.
    UniqueLocal,
    /// 224.0.0.0/4, ff00::/8.
    Multicast,
    /// 255.255.255.255.
    Broadcast,
    /// 198.18.0.0/15.
    Benchmarking,
    /// 192.0.2.0/24, 198.51.100.0/24, 203.0.113.0/24, 2001:db8::/32, 3fff::/20.
    Documentation,
    /// 240.0.0.0/4, 192.0.0.0/24 (protocol assignments), 100::/64 (discard), fec0::/10
    /// (the former site-local).
    Reserved,
}

impl ForbiddenKind {
    /// What the address is, for an attempt's error: "a private address".
    pub fn as_str(self) -> &'static str {
        match self {
            ForbiddenKind::Loopback => "a loopback address",
            ForbiddenKind::Unspecified => "the unspecified address",
            ForbiddenKind::ThisNetwork => "a this-network address (0.0.0.0/8)",
            ForbiddenKind::Private => "a private address",
            ForbiddenKind::SharedAddressSpace => "a shared (carrier-grade NAT) address",
            ForbiddenKind::LinkLocal => "a link-local address",
            ForbiddenKind::CloudMetadata => "the cloud metadata address",
            ForbiddenKind::UniqueLocal => "a unique-local address",
            ForbiddenKind::Multicast => "a multicast address",
            ForbiddenKind::Broadcast => "the broadcast address",
            ForbiddenKind::Benchmarking => "a benchmarking address",
            ForbiddenKind::Documentation => "a documentation address",
            ForbiddenKind::Reserved => "a reserved address",
        }
    }
}

impl fmt::Display for ForbiddenKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Why `ip` may not be a webhook's target; `None` for a public address. An IPv6 address that
/// carries an IPv4 one (mapped `::ffff:a.b.c.d`, compatible `::a.b.c.d`, NAT64
/// `64:ff9b::a.b.c.d`) is judged by the IPv4 address.
pub fn forbidden(ip: IpAddr) -> Option<ForbiddenKind> {
    match ip {
        IpAddr::V4(v4) => forbidden_v4(v4),
        IpAddr::V6(v6) => forbidden_v6(v6),
    }
}

fn in_v4(ip: Ipv4Addr, net: [u8; 4], prefix: u32) -> bool {
    let mask = u32::MAX.checked_shl(32 - prefix).unwrap_or(0);
    u32::from(ip) & mask == u32::from_be_bytes(net) & mask
}

fn in_v6(ip: Ipv6Addr, net: Ipv6Addr, prefix: u32) -> bool {
    let mask = u128::MAX.checked_shl(128 - prefix).unwrap_or(0);
    u128::from(ip) & mask == u128::from(net) & mask
}

fn forbidden_v4(ip: Ipv4Addr) -> Option<ForbiddenKind> {
    use ForbiddenKind::*;
    const RANGES: &[([u8; 4], u32, ForbiddenKind)] = &[
        ([169, 254, 169, 254], 32, CloudMetadata),
        ([0, 0, 0, 0], 32, Unspecified),
        ([255, 255, 255, 255], 32, Broadcast),
        ([0, 0, 0, 0], 8, ThisNetwork),
        ([127, 0, 0, 0], 8, Loopback),
        ([10, 0, 0, 0], 8, Private),
        ([172, 16, 0, 0], 12, Private),
        ([192, 168, 0, 0], 16, Private),
        ([100, 64, 0, 0], 10, SharedAddressSpace),
        ([169, 254, 0, 0], 16, LinkLocal),
        ([192, 0, 0, 0], 24, Reserved),
        ([192, 0, 2, 0], 24, Documentation),
        ([198, 51, 100, 0], 24, Documentation),
        ([203, 0, 113, 0], 24, Documentation),
        ([198, 18, 0, 0], 15, Benchmarking),
        ([224, 0, 0, 0], 4, Multicast),
        ([240, 0, 0, 0], 4, Reserved),
    ];
    RANGES
        .iter()
        .find(|(net, prefix, _)| in_v4(ip, *net, *prefix))
        .map(|(_, _, kind)| *kind)
}

fn forbidden_v6(ip: Ipv6Addr) -> Option<ForbiddenKind> {
    use ForbiddenKind::*;
    if ip.is_unspecified() {
        return Some(Unspecified);
    }
    if ip.is_loopback() {
        return Some(Loopback);
    }
    let [a, b, c, d, e, f, g, h] = ip.segments();
    let embedded = || Ipv4Addr::from((u32::from(g) << 16) | u32::from(h));
    // ::ffff:a.b.c.d (mapped), ::a.b.c.d (compatible), 64:ff9b::a.b.c.d (NAT64).
    if [a, b, c, d, e] == [0; 5] && (f == 0xffff || f == 0) {
        return forbidden_v4(embedded());
    }
    if [a, b, c, d, e, f] == [0x64, 0xff9b, 0, 0, 0, 0] {
        return forbidden_v4(embedded());
    }
    const RANGES: &[(Ipv6Addr, u32, ForbiddenKind)] = &[
        (
            Ipv6Addr::new(0xfd00, 0xec2, 0, 0, 0, 0, 0, 0x254),
            128,
            CloudMetadata,
        ),
        (Ipv6Addr::new(0xfc00, 0, 0, 0, 0, 0, 0, 0), 7, UniqueLocal),
        (Ipv6Addr::new(0xfe80, 0, 0, 0, 0, 0, 0, 0), 10, LinkLocal),
        (Ipv6Addr::new(0xfec0, 0, 0, 0, 0, 0, 0, 0), 10, Reserved),
        (Ipv6Addr::new(0xff00, 0, 0, 0, 0, 0, 0, 0), 8, Multicast),
        (
            Ipv6Addr::new(0x2001, 0xdb8, 0, 0, 0, 0, 0, 0),
            32,
            Documentation,
        ),
        (
            Ipv6Addr::new(0x3fff, 0, 0, 0, 0, 0, 0, 0),
            20,
            Documentation,
        ),
        (Ipv6Addr::new(0x100, 0, 0, 0, 0, 0, 0, 0), 64, Reserved),
    ];
    RANGES
        .iter()
        .find(|(net, prefix, _)| in_v6(ip, *net, *prefix))
        .map(|(_, _, kind)| *kind)
}

#[cfg(test)]
mod tests {
    use super::ForbiddenKind::*;
    use super::*;

    fn judge(text: &str) -> Option<ForbiddenKind> {
        forbidden(text.parse().unwrap())
    }

    /// Each range at its first and last address, and the address one past either end.
    #[test]
    fn ipv4_ranges_at_their_limits() {
        let cases: &[(&str, Option<ForbiddenKind>)] = &[
            ("0.0.0.0", Some(Unspecified)),
            ("0.0.0.1", Some(ThisNetwork)),
            ("0.255.255.255", Some(ThisNetwork)),
            ("1.0.0.0", None),
            ("9.255.255.255", None),
            ("10.0.0.0", Some(Private)),
            ("10.255.255.255", Some(Private)),
            ("11.0.0.0", None),
            ("100.63.255.255", None),
            ("100.64.0.0", Some(SharedAddressSpace)),
            ("100.127.255.255", Some(SharedAddressSpace)),
            ("100.128.0.0", None),
            ("126.255.255.255", None),
            ("127.0.0.0", Some(Loopback)),
            ("127.0.0.1", Some(Loopback)),
            ("127.255.255.255", Some(Loopback)),
            ("128.0.0.0", None),
            ("169.253.255.255", None),
            ("169.254.0.0", Some(LinkLocal)),
            ("169.254.169.253", Some(LinkLocal)),
            ("169.254.169.254", Some(CloudMetadata)),
            ("169.254.169.255", Some(LinkLocal)),
            ("169.254.255.255", Some(LinkLocal)),
            ("169.255.0.0", None),
            ("172.15.255.255", None),
            ("172.16.0.0", Some(Private)),
            ("172.31.255.255", Some(Private)),
            ("172.32.0.0", None),
            ("191.255.255.255", None),
            ("192.0.0.0", Some(Reserved)),
            ("192.0.0.255", Some(Reserved)),
            ("192.0.1.0", None),
            ("192.0.2.0", Some(Documentation)),
            ("192.0.2.255", Some(Documentation)),
            ("192.0.3.0", None),
            ("192.167.255.255", None),
            ("192.168.0.0", Some(Private)),
            ("192.168.255.255", Some(Private)),
            ("192.169.0.0", None),
            ("198.17.255.255", None),
            ("198.18.0.0", Some(Benchmarking)),
            ("198.19.255.255", Some(Benchmarking)),
            ("198.20.0.0", None),
            ("198.51.99.255", None),
            ("198.51.100.0", Some(Documentation)),
            ("198.51.100.255", Some(Documentation)),
            ("198.51.101.0", None),
            ("203.0.112.255", None),
            ("203.0.113.0", Some(Documentation)),
            ("203.0.113.255", Some(Documentation)),
            ("203.0.114.0", None),
            ("223.255.255.255", None),
            ("224.0.0.0", Some(Multicast)),
            ("239.255.255.255", Some(Multicast)),
            ("240.0.0.0", Some(Reserved)),
            ("255.255.255.254", Some(Reserved)),
            ("255.255.255.255", Some(Broadcast)),
            ("8.8.8.8", None),
            ("1.1.1.1", None),
        ];
        for (ip, kind) in cases {
            assert_eq!(judge(ip), *kind, "{ip}");
        }
    }

    #[test]
    fn ipv6_ranges_at_their_limits() {
        let cases: &[(&str, Option<ForbiddenKind>)] = &[
            ("::", Some(Unspecified)),
            ("::1", Some(Loopback)),
            ("fbff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", None),
            ("fc00::", Some(UniqueLocal)),
            ("fdff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", Some(UniqueLocal)),
            ("fd00:ec2::253", Some(UniqueLocal)),
            ("fd00:ec2::254", Some(CloudMetadata)),
            ("fe00::", None),
            ("fe7f:ffff:ffff:ffff:ffff:ffff:ffff:ffff", None),
            ("fe80::", Some(LinkLocal)),
            ("fe80::1", Some(LinkLocal)),
            ("febf:ffff:ffff:ffff:ffff:ffff:ffff:ffff", Some(LinkLocal)),
            ("fec0::", Some(Reserved)),
            ("feff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", Some(Reserved)),
            ("ff00::", Some(Multicast)),
            ("ff02::1", Some(Multicast)),
            ("ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", Some(Multicast)),
            ("2001:db7:ffff:ffff:ffff:ffff:ffff:ffff", None),
            ("2001:db8::", Some(Documentation)),
            (
                "2001:db8:ffff:ffff:ffff:ffff:ffff:ffff",
                Some(Documentation),
            ),
            ("2001:db9::", None),
            ("3ffe:ffff:ffff:ffff:ffff:ffff:ffff:ffff", None),
            ("3fff::", Some(Documentation)),
            (
                "3fff:fff:ffff:ffff:ffff:ffff:ffff:ffff",
                Some(Documentation),
            ),
            ("3fff:1000::", None),
            ("100::", Some(Reserved)),
            ("100::ffff:ffff:ffff:ffff", Some(Reserved)),
            ("100:0:0:1::", None),
            ("2606:4700::1111", None),
            ("2001:4860:4860::8888", None),
        ];
        for (ip, kind) in cases {
            assert_eq!(judge(ip), *kind, "{ip}");
        }
    }

    #[test]
    fn ipv6_carrying_ipv4_is_judged_by_the_ipv4_address() {
        let cases: &[(&str, Option<ForbiddenKind>)] = &[
            ("::ffff:127.0.0.1", Some(Loopback)),
            ("::ffff:10.1.2.3", Some(Private)),
            ("::ffff:169.254.169.254", Some(CloudMetadata)),
            ("::ffff:0.0.0.0", Some(Unspecified)),
            ("::ffff:8.8.8.8", None),
            ("::127.0.0.1", Some(Loopback)),
            ("::192.168.1.1", Some(Private)),
            ("::8.8.8.8", None),
            ("::0.0.0.2", Some(ThisNetwork)),
            ("64:ff9b::127.0.0.1", Some(Loopback)),
            ("64:ff9b::a9fe:a9fe", Some(CloudMetadata)),
            ("64:ff9b::100.64.0.1", Some(SharedAddressSpace)),
            ("64:ff9b::8.8.8.8", None),
            // Outside the three prefixes: not judged as IPv4.
            ("::1:ffff:127.0.0.1", None),
            ("64:ff9b:0:0:0:1:7f00:1", None),
            ("65:ff9b::127.0.0.1", None),
        ];
        for (ip, kind) in cases {
            assert_eq!(judge(ip), *kind, "{ip}");
        }
    }

    #[test]
    fn a_kind_reads_as_what_the_address_is() {
        assert_eq!(Private.to_string(), "a private address");
        assert_eq!(CloudMetadata.to_string(), "the cloud metadata address");
    }
}
