//! The peer handshake, sans I/O: the magic that refuses anything but a peer at its first
//! bytes, the nonces, and the HMACs bound to each side's role that prove both ends hold the
//! fleet's secret ([`PeerSecret`]).
//!
//! Must not touch: the messages after the handshake (`messages`), sockets, clocks.

use ring::hmac;

use super::WireError;

/// The first bytes of every peer connection.
pub const MAGIC: &[u8; 8] = b"SGPEER/1";

/// The home's last handshake byte: the requester is in.
pub const WELCOME: u8 = 0x57;

/// Length of a nonce.
pub const NONCE: usize = 16;

/// Length of a MAC.
pub const MAC: usize = 32;

/// Length of a challenge.
pub const CHALLENGE: usize = 8 + NONCE + MAC;

/// The fleet's peer secret.
#[derive(Debug, Clone)]
pub struct PeerSecret(hmac::Key);

impl PeerSecret {
    /// The peer secret derived from the fleet's tenancy key's subkey for peers.
    pub fn of(subkey: [u8; 32]) -> PeerSecret {
        PeerSecret(hmac::Key::new(hmac::HMAC_SHA256, &subkey))
    }

    fn mac(&self, role: &[u8], first: &[u8; NONCE], second: &[u8; NONCE]) -> [u8; MAC] {
        let mut ctx = hmac::Context::with_key(&self.0);
        ctx.update(role);
        ctx.update(first);
        ctx.update(second);
        let mut out = [0u8; MAC];
        out.copy_from_slice(ctx.sign().as_ref());
        out
    }

    /// The home's answer to the requester's nonce.
    pub fn home_mac(&self, theirs: &[u8; NONCE], mine: &[u8; NONCE]) -> [u8; MAC] {
        self.mac(b"home", theirs, mine)
    }

    /// The requester's answer to the home's nonce.
    pub fn peer_mac(&self, home: &[u8; NONCE], mine: &[u8; NONCE]) -> [u8; MAC] {
        self.mac(b"peer", home, mine)
    }

    /// Checks `mac` in constant time.
    pub fn check(expected: &[u8; MAC], mac: &[u8]) -> bool {
        use subtle::ConstantTimeEq;
        mac.len() == MAC && bool::from(expected.ct_eq(mac))
    }
}

/// A hello: the requester's nonce and name.
pub fn hello(nonce: &[u8; NONCE], name: &str) -> Vec<u8> {
    let name = &name.as_bytes()[..name.len().min(255)];
    let mut out = Vec::with_capacity(8 + NONCE + 1 + name.len());
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(nonce);
    out.push(name.len() as u8);
    out.extend_from_slice(name);
    out
}

/// Reads a hello from `buf`: `Ok(None)` while incomplete; the nonce, the name and the
/// bytes used.
pub fn parse_hello(buf: &[u8]) -> Result<Option<([u8; NONCE], String, usize)>, WireError> {
    let head = buf.len().min(8);
    if buf[..head] != MAGIC[..head] {
        return Err(WireError::NotPeer);
    }
    if buf.len() < 8 + NONCE + 1 {
        return Ok(None);
    }
    let len = usize::from(buf[8 + NONCE]);
    let end = 8 + NONCE + 1 + len;
    if buf.len() < end {
        return Ok(None);
    }
    let mut nonce = [0u8; NONCE];
    nonce.copy_from_slice(&buf[8..8 + NONCE]);
    let name = std::str::from_utf8(&buf[8 + NONCE + 1..end]).map_err(|_| WireError::Malformed)?;
    Ok(Some((nonce, name.to_string(), end)))
}

/// A challenge: the home's nonce and its MAC of both.
pub fn challenge(nonce: &[u8; NONCE], mac: &[u8; MAC]) -> [u8; CHALLENGE] {
    let mut out = [0u8; CHALLENGE];
    out[..8].copy_from_slice(MAGIC);
    out[8..8 + NONCE].copy_from_slice(nonce);
    out[8 + NONCE..].copy_from_slice(mac);
    out
}

/// Splits a whole challenge into the home's nonce and MAC.
pub fn parse_challenge(buf: &[u8; CHALLENGE]) -> Result<([u8; NONCE], &[u8]), WireError> {
    if &buf[..8] != MAGIC {
        return Err(WireError::NotPeer);
    }
    let mut nonce = [0u8; NONCE];
    nonce.copy_from_slice(&buf[8..8 + NONCE]);
    Ok((nonce, &buf[8 + NONCE..]))
}
