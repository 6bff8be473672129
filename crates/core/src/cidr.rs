//! CIDR address ranges (`10.0.0.0/8`, `2001:db8::/32`, or one address) for IP allowlists
//! (issue 29). No crate for this is in the lock file; the standard library parses the
//! addresses and this module only the prefix length and the masking.
//!
//! Must not touch: sockets, headers (which header to read a request's address from is the
//! edge's choice).

use std::net::IpAddr;

/// One range: an address and a prefix length.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cidr {
    addr: IpAddr,
    bits: u8,
}

impl Cidr {
    /// A range no client is in (`::/128`: the unspecified address).
    pub const NONE: Cidr = Cidr {
        addr: IpAddr::V6(std::net::Ipv6Addr::UNSPECIFIED),
        bits: 128,
    };

    /// Parses `a.b.c.d/n`, `x::y/n` or a lone address (all its bits). The address must
    /// have no bits set past the prefix (`10.0.0.1/8` is refused: say `10.0.0.0/8`).
    pub fn parse(text: &str) -> Result<Cidr, String> {
        let (addr, bits) = match text.split_once('/') {
            Some((a, b)) => (a, Some(b)),
            None => (text, None),
        };
        let addr: IpAddr = addr
            .parse()
            .map_err(|_| format!("`{text}` is not an IP address or CIDR range"))?;
        let max = if addr.is_ipv4() { 32 } else { 128 };
        let bits = match bits {
            None => max,
            Some(b) if !b.is_empty() && b.len() <= 3 && b.bytes().all(|c| c.is_ascii_digit()) => {
                b.parse::<u8>().unwrap_or(u8::MAX)
            }
            Some(_) => return Err(format!("`{text}`: the prefix length is not a number")),
        };
        if bits > max {
            return Err(format!("`{text}`: the prefix length is at most {max}"));
        }
        let c = Cidr { addr, bits };
        if c.masked(addr) != Some(bits_of(addr)) {
            return Err(format!(
                "`{text}` has bits set past its prefix length (the range starts at {})",
                c.network()
            ));
        }
        Ok(c)
    }

    /// The address's bits under this range's mask (`None`: another family).
    fn masked(&self, ip: IpAddr) -> Option<u128> {
        let (v, width) = match (self.addr, ip) {
            (IpAddr::V4(_), IpAddr::V4(a)) => (u32::from(a) as u128, 32),
            (IpAddr::V6(_), IpAddr::V6(a)) => (u128::from(a), 128),
            _ => return None,
        };
        let keep = u32::from(self.bits);
        // `keep` leading ones of a `width`-bit number (a shift by 128 would overflow).
        let mask = if keep == 0 {
            0
        } else {
            (u128::MAX << (width - keep)) & (u128::MAX >> (128 - width))
        };
        Some(v & mask)
    }

    /// The first address of the range.
    fn network(&self) -> IpAddr {
        let v = self.masked(self.addr).unwrap_or(0);
        match self.addr {
            IpAddr::V4(_) => IpAddr::V4((v as u32).into()),
            IpAddr::V6(_) => IpAddr::V6(v.into()),
        }
    }

    /// Whether `ip` is in the range (an IPv4-mapped IPv6 address counts as its IPv4).
    pub fn contains(&self, ip: IpAddr) -> bool {
        let ip = match ip {
            IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(ip, IpAddr::V4),
            v4 => v4,
        };
        self.masked(ip)
            .is_some_and(|m| Some(m) == self.masked(self.addr))
    }
}

fn bits_of(ip: IpAddr) -> u128 {
    match ip {
        IpAddr::V4(a) => u32::from(a) as u128,
        IpAddr::V6(a) => u128::from(a),
    }
}

impl std::fmt::Display for Cidr {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.addr, self.bits)
    }
}

/// The client address a request counts as coming from: the socket's (`peer`), or, when
/// `peer` is one of the `trusted` proxies, the address `X-Forwarded-For` gives (`forwarded`:
/// the values of every such header, in order): read from the right, the first address that
/// is not a trusted proxy. `Err`: a trusted proxy forwarded an entry that is not an
/// address (refuse rather than guess).
pub fn client_address<'a>(
    peer: IpAddr,
    forwarded: impl Iterator<Item = &'a [u8]>,
    trusted: &[Cidr],
) -> Result<IpAddr, String> {
    if !trusted.iter().any(|c| c.contains(peer)) {
        return Ok(peer);
    }
    let mut entries: Vec<&[u8]> = Vec::new();
    for value in forwarded {
        entries.extend(value.split(|&b| b == b','));
    }
    let mut client = peer;
    for e in entries.iter().rev() {
        let text = std::str::from_utf8(e).unwrap_or("").trim();
        let ip: IpAddr = text
            .parse()
            .map_err(|_| format!("X-Forwarded-For entry `{text}` is not an IP address"))?;
        client = ip;
        if !trusted.iter().any(|c| c.contains(ip)) {
            break;
        }
    }
    Ok(client)
}

/// Whether `ip` is in any of `list` (an empty list allows every address).
pub fn allowed(list: &[Cidr], ip: IpAddr) -> bool {
    list.is_empty() || list.iter().any(|c| c.contains(ip))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    #[test]
    fn ranges_from_a_table() {
        for (range, addr, want) in [
            ("10.0.0.0/8", "10.255.1.2", true),
            ("10.0.0.0/8", "11.0.0.0", false),
            ("192.168.1.0/24", "192.168.1.255", true),
            ("192.168.1.0/24", "192.168.2.0", false),
            ("192.168.1.7", "192.168.1.7", true),
            ("192.168.1.7/32", "192.168.1.8", false),
            ("0.0.0.0/0", "203.0.113.9", true),
            ("0.0.0.0/0", "::1", false),
            ("10.0.0.0/8", "::ffff:10.1.2.3", true),
            ("2001:db8::/32", "2001:db8:ffff::1", true),
            ("2001:db8::/32", "2001:db9::1", false),
            ("::1", "::1", true),
            ("::/0", "2001:db8::1", true),
            ("2001:db8::/127", "2001:db8::1", true),
            ("2001:db8::/127", "2001:db8::2", false),
            ("127.0.0.0/31", "127.0.0.1", true),
        ] {
            let c = Cidr::parse(range).unwrap();
            assert_eq!(c.contains(ip(addr)), want, "{range} {addr}");
        }
    }

    // N and N+1: the longest prefix of each family, and one more.
    #[test]
    fn malformed_ranges_are_refused() {
        assert!(Cidr::parse("10.0.0.1/32").is_ok());
        assert!(Cidr::parse("::1/128").is_ok());
        for bad in [
            "10.0.0.1/33",
            "::1/129",
            "10.0.0.1/8",
            "10.0.0.0/",
            "10.0.0.0/-1",
            "10.0.0.0/8/8",
            "10.0.0/8",
            "example.com",
            "",
            "10.0.0.0/0008",
            "2001:db8::1/32",
        ] {
            assert!(Cidr::parse(bad).is_err(), "{bad}");
        }
        assert!(allowed(&[], ip("1.2.3.4")));
    }

    #[test]
    fn forwarded_only_from_trusted_proxies() {
        let trusted = [Cidr::parse("10.0.0.0/8").unwrap()];
        let client = |peer: &str, xff: &[&str]| {
            client_address(ip(peer), xff.iter().map(|s| s.as_bytes()), &trusted)
        };
        for (peer, xff, want) in [
            ("203.0.113.9", &["198.51.100.1"][..], "203.0.113.9"),
            ("10.0.0.2", &[], "10.0.0.2"),
            ("10.0.0.2", &["198.51.100.1"], "198.51.100.1"),
            ("10.0.0.2", &["1.1.1.1, 198.51.100.1"], "198.51.100.1"),
            ("10.0.0.2", &["198.51.100.1, 10.0.0.9"], "198.51.100.1"),
            ("10.0.0.2", &["198.51.100.1", "10.0.0.9"], "198.51.100.1"),
            ("10.0.0.2", &["10.0.0.8, 10.0.0.9"], "10.0.0.8"),
            ("10.0.0.2", &["2001:db8::1"], "2001:db8::1"),
        ] {
            assert_eq!(client(peer, xff), Ok(ip(want)), "{peer} {xff:?}");
        }
        assert!(client("10.0.0.2", &["unknown"]).is_err());
        assert!(client("10.0.0.2", &["1.2.3.4:80"]).is_err());
        assert_eq!(client("203.0.113.9", &["garbage"]), Ok(ip("203.0.113.9")));
    }
}
