//! What a request holding a remote permit tells its cluster's home about the places it
//! counts (issue 27), sans I/O: the shards of an index it creates and the open search
//! contexts (scrolls, points in time) it opens, continues or closes. The home keeps these
//! counts for the whole fleet, so the plan's shard capacity and `max_open_contexts` are
//! applied once, as on one node, wherever the request arrived.
//!
//! An acquire can carry reservations (`super::wire::Acquire`: an index creation's shards,
//! an open's shard contexts), made before it queues. While the permit is held the
//! requester sends [`Held`] messages on the permit's connection, one at a time, each
//! answered once the home applied it ([`ACK`], or a verdict for a reservation): so a
//! close the client was told about is out of the home's count before the client can open
//! again. A permit that ends without a word about a reservation (its connection dropped,
//! a release) gives the reservation back, as a request that failed does on one node.
//!
//! Messages (integers big-endian; a text is a length (4) and UTF-8 bytes; an option is a
//! byte `0`/`1` and the value; a list of texts is a count (2) and the texts):
//! - `R`: release (not answered; the connection carries the next acquire);
//! - `I`, primaries (4), replicas (4): reserve an index's shards (an automatic creation
//!   while held); answered by a verdict;
//! - `F`, created (1), name (text): the oldest index reservation ended;
//! - `K`, ids (list): contexts gone (a close answered 200 or 404, a continuation 404);
//! - `O`, id (option text), shards (option 8), keep-alive ms (8): the open was answered;
//! - `C`, sent ids (list), got (option text), keep-alive ms (option 8): a continuation
//!   was answered 200.
//!
//! Must not touch: sockets, clocks, the ledgers (the home applies, `super::home`).

use crate::policy::shards::IndexShards;

use super::wire::WireError;

/// The home's answer to a [`Held`] message it applied (other than a reservation).
pub const ACK: u8 = b'k';
/// The longest held message a home reads (ids of a close can be long; not unbounded).
pub const MAX_HELD: usize = 1 << 20;

/// A message on a held permit's connection.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Held {
    Release,
    ReserveIndex(IndexShards),
    Finished {
        name: Vec<u8>,
        created: bool,
    },
    Closed {
        ids: Vec<String>,
    },
    Opened {
        id: Option<String>,
        shards: Option<u64>,
        keep_alive_ms: u64,
    },
    Continued {
        sent: Vec<String>,
        got: Option<String>,
        keep_alive_ms: Option<u64>,
    },
}

fn put_bytes(out: &mut Vec<u8>, b: &[u8]) {
    out.extend_from_slice(&(b.len() as u32).to_be_bytes());
    out.extend_from_slice(b);
}

fn put_list(out: &mut Vec<u8>, ids: &[String]) {
    let n = ids.len().min(u16::MAX as usize);
    out.extend_from_slice(&(n as u16).to_be_bytes());
    for id in &ids[..n] {
        put_bytes(out, id.as_bytes());
    }
}

fn put_opt_text(out: &mut Vec<u8>, t: Option<&str>) {
    out.push(u8::from(t.is_some()));
    if let Some(t) = t {
        put_bytes(out, t.as_bytes());
    }
}

fn put_opt_u64(out: &mut Vec<u8>, n: Option<u64>) {
    out.push(u8::from(n.is_some()));
    if let Some(n) = n {
        out.extend_from_slice(&n.to_be_bytes());
    }
}

impl Held {
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(32);
        match self {
            Held::Release => out.push(b'R'),
            Held::ReserveIndex(s) => {
                out.push(b'I');
                let sat = |n: u64| u32::try_from(n).unwrap_or(u32::MAX);
                out.extend_from_slice(&sat(s.primaries).to_be_bytes());
                out.extend_from_slice(&sat(s.replicas).to_be_bytes());
            }
            Held::Finished { name, created } => {
                out.push(b'F');
                out.push(u8::from(*created));
                put_bytes(&mut out, name);
            }
            Held::Closed { ids } => {
                out.push(b'K');
                put_list(&mut out, ids);
            }
            Held::Opened {
                id,
                shards,
                keep_alive_ms,
            } => {
                out.push(b'O');
                put_opt_text(&mut out, id.as_deref());
                put_opt_u64(&mut out, *shards);
                out.extend_from_slice(&keep_alive_ms.to_be_bytes());
            }
            Held::Continued {
                sent,
                got,
                keep_alive_ms,
            } => {
                out.push(b'C');
                put_list(&mut out, sent);
                put_opt_text(&mut out, got.as_deref());
                put_opt_u64(&mut out, *keep_alive_ms);
            }
        }
        out
    }

    /// Reads a message from `buf`: `Ok(None)` while incomplete; the bytes used.
    pub fn parse(buf: &[u8]) -> Result<Option<(Held, usize)>, WireError> {
        let mut r = Reader { buf, at: 1 };
        let Some(&tag) = buf.first() else {
            return Ok(None);
        };
        let held = match tag {
            b'R' => Some(Held::Release),
            b'I' => r.u32().zip(r.u32()).map(|(p, rep)| {
                Held::ReserveIndex(IndexShards {
                    primaries: u64::from(p),
                    replicas: u64::from(rep),
                })
            }),
            b'F' => match r.flag()? {
                None => None,
                Some(created) => r.bytes()?.map(|name| Held::Finished {
                    name: name.to_vec(),
                    created,
                }),
            },
            b'K' => r.list()?.map(|ids| Held::Closed { ids }),
            b'O' => r.opened()?,
            b'C' => r.continued()?,
            _ => return Err(WireError::Malformed),
        };
        Ok(held.map(|h| (h, r.at)))
    }
}

/// Reads fields from a message; `Ok(None)`/`None`: not all there yet.
struct Reader<'a> {
    buf: &'a [u8],
    at: usize,
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        let end = self.at.checked_add(n)?;
        let b = self.buf.get(self.at..end)?;
        self.at = end;
        Some(b)
    }

    fn u32(&mut self) -> Option<u32> {
        self.take(4)
            .map(|b| u32::from_be_bytes([b[0], b[1], b[2], b[3]]))
    }

    fn u64(&mut self) -> Option<u64> {
        let b = self.take(8)?;
        let mut a = [0u8; 8];
        a.copy_from_slice(b);
        Some(u64::from_be_bytes(a))
    }

    fn flag(&mut self) -> Result<Option<bool>, WireError> {
        match self.take(1) {
            None => Ok(None),
            Some([0]) => Ok(Some(false)),
            Some([1]) => Ok(Some(true)),
            Some(_) => Err(WireError::Malformed),
        }
    }

    fn bytes(&mut self) -> Result<Option<&'a [u8]>, WireError> {
        let Some(n) = self.u32() else {
            return Ok(None);
        };
        if n as usize > MAX_HELD {
            return Err(WireError::Malformed);
        }
        Ok(self.take(n as usize))
    }

    fn text(&mut self) -> Result<Option<String>, WireError> {
        match self.bytes()? {
            None => Ok(None),
            Some(b) => std::str::from_utf8(b)
                .map(|s| Some(s.to_string()))
                .map_err(|_| WireError::Malformed),
        }
    }

    fn list(&mut self) -> Result<Option<Vec<String>>, WireError> {
        let Some(n) = self.take(2).map(|b| u16::from_be_bytes([b[0], b[1]])) else {
            return Ok(None);
        };
        let mut ids = Vec::with_capacity(usize::from(n).min(64));
        for _ in 0..n {
            match self.text()? {
                Some(id) => ids.push(id),
                None => return Ok(None),
            }
        }
        Ok(Some(ids))
    }

    /// An optional text: `Ok(None)` incomplete, `Ok(Some(None))` absent.
    fn opt_text(&mut self) -> Result<Option<Option<String>>, WireError> {
        match self.flag()? {
            None => Ok(None),
            Some(false) => Ok(Some(None)),
            Some(true) => Ok(self.text()?.map(Some)),
        }
    }

    fn opt_u64(&mut self) -> Result<Option<Option<u64>>, WireError> {
        match self.flag()? {
            None => Ok(None),
            Some(false) => Ok(Some(None)),
            Some(true) => Ok(self.u64().map(Some)),
        }
    }

    fn opened(&mut self) -> Result<Option<Held>, WireError> {
        let Some(id) = self.opt_text()? else {
            return Ok(None);
        };
        let Some(shards) = self.opt_u64()? else {
            return Ok(None);
        };
        Ok(self.u64().map(|keep_alive_ms| Held::Opened {
            id,
            shards,
            keep_alive_ms,
        }))
    }

    fn continued(&mut self) -> Result<Option<Held>, WireError> {
        let Some(sent) = self.list()? else {
            return Ok(None);
        };
        let Some(got) = self.opt_text()? else {
            return Ok(None);
        };
        Ok(self.opt_u64()?.map(|keep_alive_ms| Held::Continued {
            sent,
            got,
            keep_alive_ms,
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn all() -> Vec<Held> {
        vec![
            Held::Release,
            Held::ReserveIndex(IndexShards {
                primaries: 2,
                replicas: 1,
            }),
            Held::Finished {
                name: b"p_books".to_vec(),
                created: true,
            },
            Held::Closed {
                ids: vec!["a".into(), "bb".into()],
            },
            Held::Closed { ids: Vec::new() },
            Held::Opened {
                id: Some("scroll-1".into()),
                shards: Some(3),
                keep_alive_ms: 60_000,
            },
            Held::Opened {
                id: None,
                shards: None,
                keep_alive_ms: 0,
            },
            Held::Continued {
                sent: vec!["x".into()],
                got: Some("y".into()),
                keep_alive_ms: None,
            },
            Held::Continued {
                sent: Vec::new(),
                got: None,
                keep_alive_ms: Some(5),
            },
        ]
    }

    // Every message round-trips, and every cut of it is only "not yet" (a home never
    // applies half a message).
    #[test]
    fn held_messages_round_trip_and_wait_for_their_end() {
        for h in all() {
            let b = h.encode();
            for cut in 0..b.len() {
                assert_eq!(Held::parse(&b[..cut]), Ok(None), "{h:?} cut at {cut}");
            }
            assert_eq!(Held::parse(&b), Ok(Some((h, b.len()))));
        }
    }

    #[test]
    fn malformed_held_messages_are_refused() {
        assert_eq!(Held::parse(b"Z"), Err(WireError::Malformed));
        // A flag that is neither 0 nor 1.
        assert_eq!(Held::parse(b"F\x02"), Err(WireError::Malformed));
        // A length past the limit is refused before anything is buffered for it.
        let mut big = vec![b'K', 0, 1];
        big.extend_from_slice(&((MAX_HELD as u32) + 1).to_be_bytes());
        assert_eq!(Held::parse(&big), Err(WireError::Malformed));
        // Not UTF-8.
        let mut bad = vec![b'K', 0, 1, 0, 0, 0, 1, 0xff];
        assert_eq!(Held::parse(&bad), Err(WireError::Malformed));
        bad[7] = b'a';
        assert!(Held::parse(&bad).unwrap().is_some());
    }
}
