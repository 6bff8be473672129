//! The write-ahead log: one log for the whole engine, in generation files under `wal/`.
//!
//! Owns: record encoding (length, CRC32, payload), appends into a memory buffer in
//! sequence-number order per shard, group commit (one `fdatasync` for every write waiting),
//! reads by position (realtime GET of unrefreshed documents), release of generations once
//! every shard with records in them has committed past them, and replay on start.
//!
//! Positions (LSNs) are byte offsets across the generations of one run; they are not
//! persisted: on start every record is replayed into its shard (skipping what the shard's
//! last tantivy commit already holds), the shards commit, and a new log begins.
//!
//! Must not touch: tantivy, mappings.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::os::unix::fs::FileExt;

use super::walfile::{decode, encode, parse_header, HEADER, MAGIC};
pub use super::walfile::{replay, OwnedRecord, ReplayInfo, WalOp, WalRecord};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};

/// The buffer is written to the file (not synced) past this size.
const BUF_FLUSH: usize = 1 << 20;
/// A generation is closed once it reaches this size.
const ROLL_BYTES: u64 = 16 << 20;
/// A shard's identity in the log.
pub type ShardKey = (Arc<str>, u16);

struct Gen {
    num: u64,
    start: u64,
    len: u64,
    path: PathBuf,
    file: Arc<File>,
    /// Highest sequence number per shard with records in this generation.
    shards: HashMap<ShardKey, i64>,
}

struct Inner {
    buf: Vec<u8>,
    /// LSN of `buf[0]`.
    buf_start: u64,
    cur: Gen,
    old: BTreeMap<u64, Gen>,
    /// Indices deleted while running: their records are no longer tracked.
    forgotten: HashSet<Arc<str>>,
}

struct SyncState {
    durable: u64,
    syncing: bool,
}

/// The engine's write-ahead log.
pub struct Wal {
    dir: PathBuf,
    inner: Mutex<Inner>,
    sync: Mutex<SyncState>,
    synced: Condvar,
    failed: AtomicBool,
}

impl std::fmt::Debug for Wal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Wal").field("dir", &self.dir).finish()
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

fn gen_path(dir: &Path, num: u64) -> PathBuf {
    dir.join(format!("wal-{num:020}.log"))
}

fn sync_dir(dir: &Path) -> io::Result<()> {
    File::open(dir)?.sync_all()
}

fn new_gen(dir: &Path, num: u64, start: u64) -> io::Result<Gen> {
    let path = gen_path(dir, num);
    let mut file = OpenOptions::new()
        .create_new(true)
        .read(true)
        .append(true)
        .open(&path)?;
    file.write_all(MAGIC)?;
    file.sync_all()?;
    sync_dir(dir)?;
    Ok(Gen {
        num,
        start,
        len: MAGIC.len() as u64,
        path,
        file: Arc::new(file),
        shards: HashMap::new(),
    })
}

impl Wal {
    /// Starts a new log in `dir` at generation `first_gen` (after replay).
    pub fn start(dir: &Path, first_gen: u64) -> io::Result<Wal> {
        fs::create_dir_all(dir)?;
        let cur = new_gen(dir, first_gen, 0)?;
        Ok(Wal {
            dir: dir.to_path_buf(),
            inner: Mutex::new(Inner {
                buf: Vec::with_capacity(BUF_FLUSH + (64 << 10)),
                buf_start: 0,
                cur,
                old: BTreeMap::new(),
                forgotten: HashSet::new(),
            }),
            sync: Mutex::new(SyncState {
                durable: 0,
                syncing: false,
            }),
            synced: Condvar::new(),
            failed: AtomicBool::new(false),
        })
    }

    /// Appends `rec`; returns its (start, end) positions. Call with the shard's lock held so
    /// that records of one shard are in sequence-number order.
    pub fn append(&self, key: &ShardKey, rec: &WalRecord<'_>) -> io::Result<(u64, u64)> {
        let mut inner = lock(&self.inner);
        let start = inner.buf_start + inner.buf.len() as u64;
        encode(rec, &mut inner.buf);
        let end = inner.buf_start + inner.buf.len() as u64;
        if !inner.forgotten.contains(&key.0) {
            let max = inner.cur.shards.entry(key.clone()).or_insert(rec.seq_no);
            *max = (*max).max(rec.seq_no);
        }
        if inner.buf.len() >= BUF_FLUSH {
            self.write_out(&mut inner)?;
        }
        Ok((start, end))
    }

    /// Writes the buffer into the current generation (no sync) and rolls it when full.
    fn write_out(&self, inner: &mut Inner) -> io::Result<()> {
        if !inner.buf.is_empty() {
            let res = inner.cur.file.as_ref().write_all(&inner.buf);
            if let Err(e) = res {
                self.failed.store(true, Ordering::SeqCst);
                return Err(e);
            }
            inner.cur.len += inner.buf.len() as u64;
            inner.buf_start += inner.buf.len() as u64;
            inner.buf.clear();
        }
        if inner.cur.len >= ROLL_BYTES {
            inner.cur.file.sync_data()?;
            let next = new_gen(&self.dir, inner.cur.num + 1, inner.buf_start)?;
            let old = std::mem::replace(&mut inner.cur, next);
            let durable_to = inner.buf_start;
            inner.old.insert(old.num, old);
            let mut st = lock(&self.sync);
            st.durable = st.durable.max(durable_to);
        }
        Ok(())
    }

    /// Returns once every record ending at or before `upto` is on disk (group commit: one
    /// caller syncs for all who wait).
    pub fn sync(&self, upto: u64) -> io::Result<()> {
        let mut st = lock(&self.sync);
        loop {
            if st.durable >= upto {
                return Ok(());
            }
            if self.failed.load(Ordering::SeqCst) {
                return Err(io::Error::other("write-ahead log failed earlier"));
            }
            if st.syncing {
                st = self.synced.wait(st).unwrap_or_else(|p| p.into_inner());
                continue;
            }
            st.syncing = true;
            drop(st);
            let res = self.flush_and_sync();
            st = lock(&self.sync);
            st.syncing = false;
            match res {
                Ok(end) => st.durable = st.durable.max(end),
                Err(e) => {
                    self.failed.store(true, Ordering::SeqCst);
                    self.synced.notify_all();
                    return Err(e);
                }
            }
            self.synced.notify_all();
        }
    }

    fn flush_and_sync(&self) -> io::Result<u64> {
        let (file, end) = {
            let mut inner = lock(&self.inner);
            self.write_out(&mut inner)?;
            (inner.cur.file.clone(), inner.buf_start)
        };
        file.sync_data()?;
        Ok(end)
    }

    /// Reads the record at `lsn` back (from the buffer or its generation file).
    pub fn read(&self, lsn: u64) -> io::Result<OwnedRecord> {
        let inner = lock(&self.inner);
        let bad = || io::Error::new(io::ErrorKind::InvalidData, "bad write-ahead log record");
        if lsn >= inner.buf_start {
            let at = (lsn - inner.buf_start) as usize;
            let h = inner.buf.get(at..at + HEADER).ok_or_else(bad)?;
            let (len, _) = parse_header(h);
            let p = inner
                .buf
                .get(at + HEADER..at + HEADER + len)
                .ok_or_else(bad)?;
            return decode(p).ok_or_else(bad);
        }
        let gen = std::iter::once(&inner.cur)
            .chain(inner.old.values())
            .find(|g| g.start <= lsn && lsn < g.start + g.len - MAGIC.len() as u64)
            .ok_or_else(bad)?;
        let off = lsn - gen.start + MAGIC.len() as u64;
        let mut h = [0u8; HEADER];
        gen.file.read_exact_at(&mut h, off)?;
        let (len, crc) = parse_header(&h);
        let mut p = vec![0u8; len];
        gen.file.read_exact_at(&mut p, off + HEADER as u64)?;
        if crc32fast::hash(&p) != crc {
            return Err(bad());
        }
        decode(&p).ok_or_else(bad)
    }

    /// Records that `key` committed everything up to `seq_no`; deletes generations no
    /// shard needs any more.
    pub fn release(&self, key: &ShardKey, seq_no: i64) {
        let mut inner = lock(&self.inner);
        let mut drop_key = |g: &mut Gen| {
            if g.shards.get(key).is_some_and(|&max| max <= seq_no) {
                g.shards.remove(key);
            }
        };
        drop_key(&mut inner.cur);
        inner.old.values_mut().for_each(&mut drop_key);
        Self::delete_unneeded(&mut inner);
    }

    /// Forgets every record of a deleted index.
    pub fn forget_index(&self, uuid: &str) {
        let mut inner = lock(&self.inner);
        inner.forgotten.insert(Arc::from(uuid));
        inner.cur.shards.retain(|k, _| &*k.0 != uuid);
        for g in inner.old.values_mut() {
            g.shards.retain(|k, _| &*k.0 != uuid);
        }
        Self::delete_unneeded(&mut inner);
    }

    fn delete_unneeded(inner: &mut Inner) {
        let empty: Vec<u64> = inner
            .old
            .iter()
            .filter(|(_, g)| g.shards.is_empty())
            .map(|(n, _)| *n)
            .collect();
        for n in empty {
            if let Some(g) = inner.old.remove(&n) {
                let _ = fs::remove_file(&g.path);
            }
        }
    }

    /// Bytes of log on disk and in memory (for stats).
    pub fn size(&self) -> u64 {
        let inner = lock(&self.inner);
        inner.cur.len + inner.old.values().map(|g| g.len).sum::<u64>() + inner.buf.len() as u64
    }

    /// Number of generation files alive.
    pub fn generations(&self) -> usize {
        let inner = lock(&self.inner);
        1 + inner.old.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec<'a>(seq: i64, id: &'a str, src: &'a [u8]) -> WalRecord<'a> {
        WalRecord {
            op: WalOp::Index,
            index_uuid: "uuid-1",
            shard: 2,
            seq_no: seq,
            version: 3,
            id,
            source: src,
            routing: None,
        }
    }

    fn key() -> ShardKey {
        (Arc::from("uuid-1"), 2)
    }

    #[test]
    fn synced_records_replay_in_order() {
        let dir = tempfile::tempdir().unwrap();
        let wal = Wal::start(dir.path(), 1).unwrap();
        let (_, e1) = wal.append(&key(), &rec(0, "a", b"{}")).unwrap();
        let (s2, e2) = wal.append(&key(), &rec(1, "b", b"{\"x\":2}")).unwrap();
        assert_eq!(s2, e1);
        wal.sync(e2).unwrap();
        assert_eq!(wal.read(s2).unwrap().id, "b");
        drop(wal);
        let mut seen = Vec::new();
        let info = replay(dir.path(), &mut |r| {
            seen.push((r.seq_no, r.id));
            Ok(())
        })
        .unwrap();
        assert_eq!(seen, vec![(0, "a".to_string()), (1, "b".to_string())]);
        assert!(!info.torn);
        assert_eq!(info.last_gen, 1);
    }

    #[test]
    fn torn_tail_is_ignored() {
        let dir = tempfile::tempdir().unwrap();
        let wal = Wal::start(dir.path(), 1).unwrap();
        let (_, e) = wal.append(&key(), &rec(0, "a", b"{}")).unwrap();
        wal.append(&key(), &rec(1, "b", b"{\"long\":\"value\"}"))
            .unwrap();
        let (_, e2) = wal.append(&key(), &rec(2, "c", b"{}")).unwrap();
        wal.sync(e2).unwrap();
        drop(wal);
        // cut the file in the middle of the second record
        let path = gen_path(dir.path(), 1);
        let f = OpenOptions::new().write(true).open(&path).unwrap();
        f.set_len(MAGIC.len() as u64 + e + 5).unwrap();
        let mut n = 0;
        let info = replay(dir.path(), &mut |_| {
            n += 1;
            Ok(())
        })
        .unwrap();
        assert_eq!(n, 1);
        assert!(info.torn);
    }

    #[test]
    fn corrupt_byte_stops_replay() {
        let dir = tempfile::tempdir().unwrap();
        let wal = Wal::start(dir.path(), 1).unwrap();
        let (_, e) = wal.append(&key(), &rec(0, "abc", b"{}")).unwrap();
        wal.sync(e).unwrap();
        drop(wal);
        let path = gen_path(dir.path(), 1);
        let mut bytes = fs::read(&path).unwrap();
        let last = bytes.len() - 1;
        bytes[last] ^= 0xff;
        fs::write(&path, bytes).unwrap();
        let info = replay(dir.path(), &mut |_| panic!("corrupt record visited")).unwrap();
        assert!(info.torn);
    }

    #[test]
    fn concurrent_syncs_all_return_durable() {
        let dir = tempfile::tempdir().unwrap();
        let wal = Arc::new(Wal::start(dir.path(), 1).unwrap());
        let handles: Vec<_> = (0..8)
            .map(|t| {
                let wal = wal.clone();
                std::thread::spawn(move || {
                    for i in 0..50 {
                        let id = format!("{t}-{i}");
                        let (_, end) = wal.append(&key(), &rec(i, &id, b"{}")).unwrap();
                        wal.sync(end).unwrap();
                    }
                })
            })
            .collect();
        for h in handles {
            h.join().unwrap();
        }
        drop(wal);
        let mut n = 0;
        replay(dir.path(), &mut |_| {
            n += 1;
            Ok(())
        })
        .unwrap();
        assert_eq!(n, 400);
    }

    #[test]
    fn generations_roll_and_are_released() {
        let dir = tempfile::tempdir().unwrap();
        let wal = Wal::start(dir.path(), 1).unwrap();
        let big = vec![b'x'; 1 << 20];
        let mut last = 0;
        for i in 0..20 {
            let (start, end) = wal.append(&key(), &rec(i, "id", &big)).unwrap();
            wal.sync(end).unwrap();
            last = start;
        }
        assert!(wal.generations() >= 2);
        assert_eq!(wal.read(last).unwrap().seq_no, 19);
        wal.release(&key(), 19);
        assert_eq!(wal.generations(), 1);
        let files = fs::read_dir(dir.path()).unwrap().count();
        assert_eq!(files, 1);
    }
}
