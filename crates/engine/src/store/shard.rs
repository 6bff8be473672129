//! One primary shard: a tantivy index, its writer, the live version map of writes not yet
//! visible to searches, the id filter, sequence numbers, refresh and realtime GET.
//!
//! Owns: the order of writes within the shard (one lock), version/seq_no assignment,
//! optimistic concurrency checks, and what a refresh (= tantivy commit + reader reload) does.
//! Must not touch: mappings (documents arrive mapped), HTTP, other shards.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use tantivy::directory::MmapDirectory;
use tantivy::{
    DocAddress, Index, IndexReader, IndexSettings, IndexWriter, ReloadPolicy, Searcher, Term,
};

use super::lookup::{build_id_filter, IdFilter};
pub use super::lookup::{find_id, id_hash, source_of, stored_of};
pub use super::ops::{Cond, DocResult, Outcome, ShardOp, Stored, Update, Updater};
use super::schema::{self, Fields};
use super::wal::{OwnedRecord, ShardKey, Wal, WalOp, WalRecord};
use crate::error::{EngineError, EngineResult};
use crate::mapping::{IndexedDoc, Mapping};

/// Writer tuning of every shard.
#[derive(Debug, Clone, Copy)]
pub struct WriterOptions {
    pub threads: usize,
    pub memory_per_thread: usize,
}

impl Default for WriterOptions {
    fn default() -> Self {
        WriterOptions {
            threads: 1,
            memory_per_thread: 48 << 20,
        }
    }
}

/// Document counts and size of a shard.
#[derive(Debug, Clone, Copy, Default)]
pub struct ShardStats {
    pub docs: u64,
    pub deleted: u64,
    pub bytes: u64,
}

#[derive(Clone, Copy)]
struct Live {
    version: u64,
    seq_no: i64,
    /// Position of the record in the WAL; None for a delete.
    lsn: Option<u64>,
}

enum Loc {
    Wal(u64),
    Doc(Searcher, DocAddress),
    Gone,
}

struct Current {
    version: u64,
    seq_no: i64,
    loc: Loc,
}

impl Current {
    fn exists(&self) -> bool {
        !matches!(self.loc, Loc::Gone)
    }
}

struct State {
    writer: Option<IndexWriter>,
    live: HashMap<Box<str>, Live>,
    ids: IdFilter,
    max_seq: i64,
    committed_seq: i64,
    dirty: bool,
    last_write: Instant,
}

/// One primary shard.
pub struct Shard {
    pub num: u16,
    key: ShardKey,
    dir: PathBuf,
    index: Index,
    reader: IndexReader,
    pub fields: Fields,
    opts: WriterOptions,
    state: Mutex<State>,
    refreshes: Mutex<u64>,
    refreshed: Condvar,
}

impl std::fmt::Debug for Shard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Shard").field("key", &self.key).finish()
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

fn read_committed_seq(index: &Index) -> EngineResult<i64> {
    let payload = index.load_metas()?.payload;
    Ok(payload
        .and_then(|p| serde_json::from_str::<serde_json::Value>(&p).ok())
        .and_then(|v| v.get("max_seq_no").and_then(|s| s.as_i64()))
        .unwrap_or(-1))
}

fn dir_size(dir: &Path) -> u64 {
    std::fs::read_dir(dir)
        .map(|rd| {
            rd.filter_map(Result::ok)
                .filter_map(|e| e.metadata().ok())
                .filter(|m| m.is_file())
                .map(|m| m.len())
                .sum()
        })
        .unwrap_or(0)
}

impl Shard {
    /// Opens (or creates) the shard in `dir`.
    pub fn open(
        dir: &Path,
        key: ShardKey,
        mapping: &Mapping,
        opts: WriterOptions,
    ) -> EngineResult<Shard> {
        std::fs::create_dir_all(dir)?;
        let mmap = MmapDirectory::open(dir).map_err(EngineError::internal)?;
        let index = if Index::exists(&mmap).map_err(EngineError::internal)? {
            Index::open(mmap)?
        } else {
            Index::create(mmap, schema::build_schema(), IndexSettings::default())?
        };
        schema::register_tokenizers(&index, mapping);
        let fields = schema::fields(&index.schema())?;
        let reader = index
            .reader_builder()
            .reload_policy(ReloadPolicy::Manual)
            .try_into()?;
        let committed_seq = read_committed_seq(&index)?;
        let ids = build_id_filter(&reader.searcher(), &fields)?;
        Ok(Shard {
            num: key.1,
            key,
            dir: dir.to_path_buf(),
            index,
            reader,
            fields,
            opts,
            state: Mutex::new(State {
                writer: None,
                live: HashMap::new(),
                ids,
                max_seq: committed_seq,
                committed_seq,
                dirty: false,
                last_write: Instant::now(),
            }),
            refreshes: Mutex::new(0),
            refreshed: Condvar::new(),
        })
    }

    /// The tantivy index (for tokenizer registration).
    pub fn index(&self) -> &Index {
        &self.index
    }

    /// The current point-in-time searcher (refreshed writes only).
    pub fn searcher(&self) -> Searcher {
        self.reader.searcher()
    }

    fn ensure_writer<'a>(&self, st: &'a mut State) -> EngineResult<&'a IndexWriter> {
        if st.writer.is_none() {
            let opts = tantivy::indexer::IndexWriterOptions::builder()
                .num_worker_threads(self.opts.threads)
                .memory_budget_per_thread(self.opts.memory_per_thread)
                .num_merge_threads(1)
                .build();
            st.writer = Some(self.index.writer_with_options(opts)?);
        }
        Ok(st.writer.as_ref().expect("just set"))
    }

    /// Applies `ops` in order under the shard lock, pushing one result per op into `out`.
    /// Returns (end position in the WAL to sync, refresh generation observed).
    pub fn write(
        &self,
        wal: &Wal,
        ops: Vec<ShardOp<'_>>,
        out: &mut Vec<EngineResult<Outcome>>,
    ) -> EngineResult<(u64, u64)> {
        let mut st = lock(&self.state);
        self.ensure_writer(&mut st)?;
        let mut end = 0u64;
        for op in ops {
            let r = match op {
                ShardOp::Index {
                    id,
                    source,
                    doc,
                    create,
                    cond,
                } => self.index_op(&mut st, wal, id, source, doc, create, cond, &mut end),
                ShardOp::Delete { id, cond } => self.delete_op(&mut st, wal, id, cond, &mut end),
                ShardOp::Update { id, cond, updater } => {
                    self.update_op(&mut st, wal, id, cond, updater, &mut end)
                }
            };
            out.push(r);
        }
        let gen = *lock(&self.refreshes);
        Ok((end, gen))
    }

    fn current(&self, st: &State, id: &str) -> EngineResult<Option<Current>> {
        if let Some(l) = st.live.get(id) {
            return Ok(Some(Current {
                version: l.version,
                seq_no: l.seq_no,
                loc: l.lsn.map_or(Loc::Gone, Loc::Wal),
            }));
        }
        if !st.ids.contains(&id_hash(id.as_bytes())) {
            return Ok(None);
        }
        let searcher = self.reader.searcher();
        Ok(
            find_id(&searcher, &self.fields, id)?.map(|(addr, version, seq_no)| Current {
                version,
                seq_no,
                loc: Loc::Doc(searcher, addr),
            }),
        )
    }

    fn check_cond(&self, id: &str, cur: Option<&Current>, cond: &Cond) -> EngineResult<()> {
        let conflict = |reason: String| EngineError::VersionConflict {
            index: String::new(),
            id: id.to_string(),
            reason,
        };
        if let Some(want) = cond.if_seq_no {
            let term = cond.if_primary_term.unwrap_or(1);
            match cur.filter(|c| c.exists()) {
                None => return Err(conflict(format!(
                    "version conflict, required seqNo [{want}], primary term [{term}] but no document was found"
                ))),
                Some(c) if c.seq_no != want || term != 1 => return Err(conflict(format!(
                    "version conflict, required seqNo [{want}], primary term [{term}]. current document has seqNo [{}] and primary term [1]",
                    c.seq_no
                ))),
                Some(_) => {}
            }
        }
        if let (Some((v, gte)), Some(c)) = (cond.external, cur) {
            let ok = if gte { v >= c.version } else { v > c.version };
            if !ok {
                return Err(conflict(format!(
                    "version conflict, current version [{}] is higher{} than the one provided [{v}]",
                    c.version,
                    if gte { "" } else { " or equal to" }
                )));
            }
        }
        Ok(())
    }

    #[allow(clippy::too_many_arguments)]
    fn index_op(
        &self,
        st: &mut State,
        wal: &Wal,
        id: &str,
        source: &[u8],
        doc: &IndexedDoc,
        create: bool,
        cond: Cond,
        end: &mut u64,
    ) -> EngineResult<Outcome> {
        let cur = self.current(st, id)?;
        self.check_cond(id, cur.as_ref(), &cond)?;
        let existed = cur.as_ref().is_some_and(Current::exists);
        if create && existed {
            return Err(EngineError::VersionConflict {
                index: String::new(),
                id: id.to_string(),
                reason: format!(
                    "version conflict, document already exists (current version [{}])",
                    cur.as_ref().map_or(1, |c| c.version)
                ),
            });
        }
        let version = match cond.external {
            Some((v, _)) => v,
            None => cur.as_ref().map_or(1, |c| c.version + 1),
        };
        let seq_no = st.max_seq + 1;
        let rec = WalRecord {
            op: WalOp::Index,
            index_uuid: &self.key.0,
            shard: self.key.1,
            seq_no,
            version,
            id,
            source,
            routing: doc.routing.as_deref(),
        };
        let (lsn, e) = wal.append(&self.key, &rec)?;
        *end = (*end).max(e);
        self.put(st, id, source, doc, version, seq_no)?;
        st.live.insert(
            id.into(),
            Live {
                version,
                seq_no,
                lsn: Some(lsn),
            },
        );
        let result = if existed {
            DocResult::Updated
        } else {
            DocResult::Created
        };
        Ok(Outcome {
            result,
            version,
            seq_no,
        })
    }

    /// Adds a document version to the writer (deleting older versions of the id).
    fn put(
        &self,
        st: &mut State,
        id: &str,
        source: &[u8],
        doc: &IndexedDoc,
        version: u64,
        seq_no: i64,
    ) -> EngineResult<()> {
        let rec = schema::DocRecord {
            id,
            source,
            version,
            seq_no,
            doc,
        };
        let tdoc = schema::to_tantivy(&self.fields, &rec);
        let fresh = st.ids.insert(id_hash(id.as_bytes()));
        let writer = self.ensure_writer(st)?;
        if !fresh {
            writer.delete_term(Term::from_field_text(self.fields.id, id));
        }
        writer.add_document(tdoc)?;
        st.max_seq = st.max_seq.max(seq_no);
        st.dirty = true;
        st.last_write = Instant::now();
        Ok(())
    }

    fn delete_op(
        &self,
        st: &mut State,
        wal: &Wal,
        id: &str,
        cond: Cond,
        end: &mut u64,
    ) -> EngineResult<Outcome> {
        let cur = self.current(st, id)?;
        self.check_cond(id, cur.as_ref(), &cond)?;
        let Some(cur) = cur.filter(Current::exists) else {
            st.max_seq += 1;
            return Ok(Outcome {
                result: DocResult::NotFound,
                version: 1,
                seq_no: st.max_seq,
            });
        };
        let version = cond.external.map_or(cur.version + 1, |(v, _)| v);
        let seq_no = st.max_seq + 1;
        let rec = WalRecord {
            op: WalOp::Delete,
            index_uuid: &self.key.0,
            shard: self.key.1,
            seq_no,
            version,
            id,
            source: &[],
            routing: None,
        };
        let (_, e) = wal.append(&self.key, &rec)?;
        *end = (*end).max(e);
        self.ensure_writer(st)?
            .delete_term(Term::from_field_text(self.fields.id, id));
        st.max_seq = seq_no;
        st.dirty = true;
        st.last_write = Instant::now();
        st.live.insert(
            id.into(),
            Live {
                version,
                seq_no,
                lsn: None,
            },
        );
        Ok(Outcome {
            result: DocResult::Deleted,
            version,
            seq_no,
        })
    }

    fn update_op(
        &self,
        st: &mut State,
        wal: &Wal,
        id: &str,
        cond: Cond,
        updater: &mut Updater<'_>,
        end: &mut u64,
    ) -> EngineResult<Outcome> {
        let cur = self.current(st, id)?;
        self.check_cond(id, cur.as_ref(), &cond)?;
        let source = match cur.as_ref().map(|c| &c.loc) {
            Some(Loc::Wal(lsn)) => Some(wal.read(*lsn)?.source),
            Some(Loc::Doc(s, addr)) => Some(source_of(s, &self.fields, *addr)?),
            Some(Loc::Gone) | None => None,
        };
        match updater(source.as_deref())? {
            Update::Noop => {
                let c = cur.expect("noop needs a document");
                Ok(Outcome {
                    result: DocResult::Noop,
                    version: c.version,
                    seq_no: c.seq_no,
                })
            }
            Update::Write { source, doc } => {
                let plain = Cond::default();
                self.index_op(st, wal, id, &source, &doc, false, plain, end)
            }
            Update::Delete => self.delete_op(st, wal, id, Cond::default(), end),
        }
    }

    /// Realtime GET: the latest acknowledged version of `id`, refreshed or not.
    pub fn get(&self, wal: &Wal, id: &str, realtime: bool) -> EngineResult<Option<Stored>> {
        if realtime {
            let live = lock(&self.state).live.get(id).copied();
            if let Some(l) = live {
                let Some(lsn) = l.lsn else { return Ok(None) };
                if let Ok(rec) = wal.read(lsn) {
                    if rec.id == id {
                        return Ok(Some(Stored {
                            version: l.version,
                            seq_no: l.seq_no,
                            source: rec.source,
                            routing: rec.routing,
                        }));
                    }
                }
            }
        }
        let searcher = self.reader.searcher();
        match find_id(&searcher, &self.fields, id)? {
            None => Ok(None),
            Some((addr, version, seq_no)) => {
                let (source, routing) = stored_of(&searcher, &self.fields, addr)?;
                Ok(Some(Stored {
                    version,
                    seq_no,
                    source,
                    routing,
                }))
            }
        }
    }

    /// Commits pending writes and reloads the searcher. False when nothing was pending.
    pub fn refresh(&self, wal: &Wal) -> EngineResult<bool> {
        let mut st = lock(&self.state);
        if !st.dirty {
            return Ok(false);
        }
        let seq = st.max_seq;
        let writer = st.writer.as_mut().expect("a dirty shard has a writer");
        let mut prepared = writer.prepare_commit()?;
        prepared.set_payload(&format!("{{\"max_seq_no\":{seq}}}"));
        prepared.commit()?;
        self.reader.reload()?;
        st.live = HashMap::new();
        st.dirty = false;
        st.committed_seq = seq;
        *lock(&self.refreshes) += 1;
        drop(st);
        self.refreshed.notify_all();
        wal.release(&self.key, seq);
        Ok(true)
    }

    /// Whether writes are waiting for a refresh.
    pub fn is_dirty(&self) -> bool {
        lock(&self.state).dirty
    }

    /// Waits until a refresh after generation `gen` completed (or `timeout`).
    pub fn wait_refreshed(&self, gen: u64, timeout: Duration) -> bool {
        let guard = lock(&self.refreshes);
        let (g, _) = self
            .refreshed
            .wait_timeout_while(guard, timeout, |g| *g <= gen)
            .unwrap_or_else(|p| p.into_inner());
        *g > gen
    }

    /// Closes the writer when idle (frees its threads and memory). True when closed.
    pub fn close_idle_writer(&self, idle: Duration) -> bool {
        let mut st = lock(&self.state);
        if st.dirty || st.writer.is_none() || st.last_write.elapsed() < idle {
            return false;
        }
        st.writer = None;
        true
    }

    /// Sequence number of the last commit.
    pub fn committed_seq(&self) -> i64 {
        lock(&self.state).committed_seq
    }

    /// Applies a WAL record on start (skipping what the last commit holds).
    pub fn replay(&self, rec: &OwnedRecord, doc: Option<&IndexedDoc>) -> EngineResult<()> {
        let mut st = lock(&self.state);
        if rec.seq_no <= st.committed_seq {
            return Ok(());
        }
        match (rec.op, doc) {
            (WalOp::Index, Some(doc)) => {
                self.put(&mut st, &rec.id, &rec.source, doc, rec.version, rec.seq_no)?
            }
            _ => {
                self.ensure_writer(&mut st)?
                    .delete_term(Term::from_field_text(self.fields.id, &rec.id));
                st.max_seq = st.max_seq.max(rec.seq_no);
                st.dirty = true;
            }
        }
        Ok(())
    }

    /// Document counts and bytes on disk.
    pub fn stats(&self) -> ShardStats {
        let s = self.reader.searcher();
        ShardStats {
            docs: s.num_docs(),
            deleted: s
                .segment_readers()
                .iter()
                .map(|r| r.num_deleted_docs() as u64)
                .sum(),
            bytes: dir_size(&self.dir),
        }
    }

    /// Registers the tokenizers of a grown mapping.
    pub fn update_tokenizers(&self, mapping: &Mapping) {
        schema::register_tokenizers(&self.index, mapping);
    }

    /// The shard's key in the WAL.
    pub fn key(&self) -> &ShardKey {
        &self.key
    }
}
