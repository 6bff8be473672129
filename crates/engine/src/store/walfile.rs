//! The write-ahead log's file format and replay: `wal-<gen>.log` files start with a
//! magic line; each record is `[payload length u32][crc32 u32][payload]`, the payload
//! `[op u8][uuid len u8][uuid][shard u16][seq_no i64][version u64][id len u32][id]
//! [source len u32][source]` (little endian); an index record with a routing value has op
//! 3 and ends with `[routing len u32][routing]`. Replay stops a file at the first partial or
//! corrupt record (a write cut by a crash).

use std::fs::{self, File};
use std::io::{self, BufReader, Read};
use std::path::{Path, PathBuf};

pub(super) const MAGIC: &[u8; 8] = b"SGWAL01\n";
pub(super) const HEADER: usize = 8;
/// Largest record accepted (a 100MB document is refused before it gets here).
const MAX_RECORD: usize = 512 << 20;

/// What a record does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WalOp {
    Index = 1,
    Delete = 2,
}

/// A record to append.
#[derive(Debug, Clone, Copy)]
pub struct WalRecord<'a> {
    pub op: WalOp,
    pub index_uuid: &'a str,
    pub shard: u16,
    pub seq_no: i64,
    pub version: u64,
    pub id: &'a str,
    pub source: &'a [u8],
    /// The document's `_routing` (index records).
    pub routing: Option<&'a str>,
}

/// A record read back.
#[derive(Debug, Clone, PartialEq)]
pub struct OwnedRecord {
    pub op: WalOp,
    pub index_uuid: String,
    pub shard: u16,
    pub seq_no: i64,
    pub version: u64,
    pub id: String,
    pub source: Vec<u8>,
    pub routing: Option<String>,
}

/// Encodes `rec` (header and payload) at the end of `out`.
pub fn encode(rec: &WalRecord<'_>, out: &mut Vec<u8>) {
    let start = out.len();
    out.extend_from_slice(&[0u8; HEADER]);
    let routed = rec.op == WalOp::Index && rec.routing.is_some();
    out.push(if routed { 3 } else { rec.op as u8 });
    out.push(rec.index_uuid.len() as u8);
    out.extend_from_slice(rec.index_uuid.as_bytes());
    out.extend_from_slice(&rec.shard.to_le_bytes());
    out.extend_from_slice(&rec.seq_no.to_le_bytes());
    out.extend_from_slice(&rec.version.to_le_bytes());
    out.extend_from_slice(&(rec.id.len() as u32).to_le_bytes());
    out.extend_from_slice(rec.id.as_bytes());
    out.extend_from_slice(&(rec.source.len() as u32).to_le_bytes());
    out.extend_from_slice(rec.source);
    if let Some(r) = rec.routing.filter(|_| routed) {
        out.extend_from_slice(&(r.len() as u32).to_le_bytes());
        out.extend_from_slice(r.as_bytes());
    }
    let payload_len = (out.len() - start - HEADER) as u32;
    let crc = crc32fast::hash(&out[start + HEADER..]);
    out[start..start + 4].copy_from_slice(&payload_len.to_le_bytes());
    out[start + 4..start + 8].copy_from_slice(&crc.to_le_bytes());
}

/// Decodes one payload (after its header was checked).
pub fn decode(p: &[u8]) -> Option<OwnedRecord> {
    let mut c = Dec { p, i: 0 };
    let (op, routed) = match c.u8()? {
        1 => (WalOp::Index, false),
        2 => (WalOp::Delete, false),
        3 => (WalOp::Index, true),
        _ => return None,
    };
    let uuid_len = c.u8()? as usize;
    let index_uuid = String::from_utf8(c.take(uuid_len)?.to_vec()).ok()?;
    let shard = u16::from_le_bytes(c.take(2)?.try_into().ok()?);
    let seq_no = i64::from_le_bytes(c.take(8)?.try_into().ok()?);
    let version = u64::from_le_bytes(c.take(8)?.try_into().ok()?);
    let id_len = u32::from_le_bytes(c.take(4)?.try_into().ok()?) as usize;
    let id = String::from_utf8(c.take(id_len)?.to_vec()).ok()?;
    let src_len = u32::from_le_bytes(c.take(4)?.try_into().ok()?) as usize;
    let source = c.take(src_len)?.to_vec();
    let routing = if routed {
        let len = u32::from_le_bytes(c.take(4)?.try_into().ok()?) as usize;
        Some(String::from_utf8(c.take(len)?.to_vec()).ok()?)
    } else {
        None
    };
    (c.i == p.len()).then_some(OwnedRecord {
        op,
        index_uuid,
        shard,
        seq_no,
        version,
        id,
        source,
        routing,
    })
}

struct Dec<'a> {
    p: &'a [u8],
    i: usize,
}

impl<'a> Dec<'a> {
    fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        let s = self.p.get(self.i..self.i.checked_add(n)?)?;
        self.i += n;
        Some(s)
    }
    fn u8(&mut self) -> Option<u8> {
        self.take(1).map(|s| s[0])
    }
}

/// Splits a header into (payload length, crc).
pub(super) fn parse_header(h: &[u8]) -> (usize, u32) {
    let len = u32::from_le_bytes(h[0..4].try_into().expect("4 bytes")) as usize;
    let crc = u32::from_le_bytes(h[4..8].try_into().expect("4 bytes"));
    (len, crc)
}

/// What a replay found.
#[derive(Debug, Default)]
pub struct ReplayInfo {
    /// Generation files read (to delete once their records are committed elsewhere).
    pub files: Vec<PathBuf>,
    /// Highest generation number seen.
    pub last_gen: u64,
    pub records: u64,
    /// A file ended in a partial or corrupt record (a write cut by a crash).
    pub torn: bool,
}

/// Reads every record of every generation under `dir`, in order, into `visit`.
pub fn replay(
    dir: &Path,
    visit: &mut dyn FnMut(OwnedRecord) -> io::Result<()>,
) -> io::Result<ReplayInfo> {
    fs::create_dir_all(dir)?;
    let mut gens: Vec<(u64, PathBuf)> = Vec::new();
    for entry in fs::read_dir(dir)? {
        let path = entry?.path();
        let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
        if let Some(num) = name
            .strip_prefix("wal-")
            .and_then(|n| n.strip_suffix(".log"))
            .and_then(|n| n.parse().ok())
        {
            gens.push((num, path));
        }
    }
    gens.sort();
    let mut info = ReplayInfo::default();
    for (num, path) in gens {
        info.last_gen = info.last_gen.max(num);
        let mut r = BufReader::with_capacity(1 << 20, File::open(&path)?);
        let mut magic = [0u8; 8];
        if r.read_exact(&mut magic).is_ok() && &magic == MAGIC {
            info.torn |= !replay_file(&mut r, visit, &mut info.records)?;
        }
        info.files.push(path);
    }
    Ok(info)
}

/// Replays records of one file; false when it ends in a torn record.
fn replay_file(
    r: &mut impl Read,
    visit: &mut dyn FnMut(OwnedRecord) -> io::Result<()>,
    count: &mut u64,
) -> io::Result<bool> {
    let mut header = [0u8; HEADER];
    let mut payload = Vec::new();
    loop {
        match read_full(r, &mut header)? {
            0 => return Ok(true),
            n if n < HEADER => return Ok(false),
            _ => {}
        }
        let (len, crc) = parse_header(&header);
        if len > MAX_RECORD {
            return Ok(false);
        }
        payload.resize(len, 0);
        if read_full(r, &mut payload)? < len || crc32fast::hash(&payload) != crc {
            return Ok(false);
        }
        match decode(&payload) {
            Some(rec) => visit(rec)?,
            None => return Ok(false),
        }
        *count += 1;
    }
}

fn read_full(r: &mut impl Read, buf: &mut [u8]) -> io::Result<usize> {
    let mut n = 0;
    while n < buf.len() {
        match r.read(&mut buf[n..]) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(n)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encode_decode_round_trip() {
        let rec = WalRecord {
            op: WalOp::Index,
            index_uuid: "u",
            shard: 2,
            seq_no: 7,
            version: 3,
            id: "doc-1",
            source: b"{\"a\":1}",
            routing: None,
        };
        let mut buf = Vec::new();
        encode(&rec, &mut buf);
        let (len, crc) = parse_header(&buf[..HEADER]);
        assert_eq!(len, buf.len() - HEADER);
        assert_eq!(crc, crc32fast::hash(&buf[HEADER..]));
        let r = decode(&buf[HEADER..]).unwrap();
        assert_eq!(
            (r.seq_no, r.id.as_str(), r.source.as_slice(), r.op),
            (7, "doc-1", &b"{\"a\":1}"[..], WalOp::Index)
        );
        assert!(decode(&buf[HEADER..buf.len() - 1]).is_none());
        assert!(decode(&[9]).is_none());
        // a routed record carries its routing; an unrouted one has none
        assert_eq!(r.routing, None);
        let routed = WalRecord {
            routing: Some("user-7"),
            ..rec
        };
        let mut buf = Vec::new();
        encode(&routed, &mut buf);
        let r = decode(&buf[HEADER..]).unwrap();
        assert_eq!((r.op, r.routing.as_deref()), (WalOp::Index, Some("user-7")));
        assert_eq!(r.source, b"{\"a\":1}");
        assert!(decode(&buf[HEADER..buf.len() - 1]).is_none());
    }
}
